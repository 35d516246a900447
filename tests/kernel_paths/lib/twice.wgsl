fn twice(v: f32) -> f32 { return v + v; }
