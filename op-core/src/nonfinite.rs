//! JSON for floats that may be infinite or NaN (an error measure, a margin): JSON has no such
//! numbers and `serde_json` would write `null`, so these are written as the strings `"inf"`,
//! `"-inf"` and `"nan"` and read back from them. Use as `#[serde(with = "...")]`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Writes `v` as a number, or as `"inf"`, `"-inf"` or `"nan"`.
pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    match *v {
        v if v.is_finite() => v.serialize(s),
        v if v.is_nan() => s.serialize_str("nan"),
        v if v > 0.0 => s.serialize_str("inf"),
        _ => s.serialize_str("-inf"),
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Repr {
    Number(f64),
    Text(String),
}

/// Reads a number, or `"inf"`, `"-inf"` or `"nan"`.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match Repr::deserialize(d)? {
        Repr::Number(v) => Ok(v),
        Repr::Text(t) => match t.as_str() {
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            "nan" => Ok(f64::NAN),
            other => Err(serde::de::Error::custom(format!("expected a number, \"inf\", \"-inf\" or \"nan\", found \"{other}\""))),
        },
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize, serde::Deserialize, Debug)]
    struct V(#[serde(with = "super")] f64);

    #[test]
    fn infinities_and_nan_round_trip_as_strings() {
        for v in [1.5, 0.0, f64::INFINITY, f64::NEG_INFINITY] {
            let back: V = serde_json::from_str(&serde_json::to_string(&V(v)).unwrap()).unwrap();
            assert_eq!(back.0, v);
        }
        assert_eq!(serde_json::to_string(&V(f64::INFINITY)).unwrap(), "\"inf\"");
        assert!(serde_json::from_str::<V>(&serde_json::to_string(&V(f64::NAN)).unwrap()).unwrap().0.is_nan());
        assert!(serde_json::from_str::<V>("\"lots\"").is_err());
    }
}
