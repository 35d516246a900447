//! Pairs of ops for the identity's closure: in each pair the two references are token for token
//! the same, and differ only in code the syntax calls without naming it (an operator, `*w`,
//! `t[i]`, `for`, `==`, `.into()`), in a helper's `cfg` attributes, or in a helper of the same
//! name in another inline module of this file. The `a` op maps `[1, 2]` to `[2, 3]` and the `b`
//! op to `[10, 20]`; the marker literals `1.0_f32` and `10.0_f32` appear only in the code each
//! reaches, never in a reference. Each module names its type through `use .. as W`, so the
//! reference's tokens stay equal while the types (and their impls) are two, each named once in
//! the crate.

// Fields only one of the two impls reads; a feature this package does not declare (tested on
// purpose: its value as the compiler was configured enters the identity).
#![allow(dead_code, unexpected_cfgs)]

/// `a + b` through `impl Add`. The ops are written out, never by a macro, so each attribute
/// stands in this file at module level.
pub mod add {
    pub struct AddA(pub f32);
    impl std::ops::Add for AddA {
        type Output = AddA;
        fn add(self, o: AddA) -> AddA {
            AddA(self.0 + o.0 * 1.0_f32)
        }
    }
    pub struct AddB(pub f32);
    impl std::ops::Add for AddB {
        type Output = AddB;
        #[allow(clippy::suspicious_arithmetic_impl)] // another computation behind `+`, on purpose
        fn add(self, _o: AddB) -> AddB {
            AddB(self.0 * 10.0_f32)
        }
    }
    pub mod a {
        use super::AddA as W;
        #[op_runtime::op(name = "test/holes/add", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| (W(*v) + W(1.0)).0).collect()
        }
    }
    pub mod b {
        use super::AddB as W;
        #[op_runtime::op(name = "test/holes/add", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| (W(*v) + W(1.0)).0).collect()
        }
    }
}

/// `*w` through `impl Deref`.
pub mod deref {
    pub struct DerefA(pub f32, pub f32);
    impl std::ops::Deref for DerefA {
        type Target = f32;
        fn deref(&self) -> &f32 {
            let _marker = 1.0_f32;
            &self.0
        }
    }
    pub struct DerefB(pub f32, pub f32);
    impl std::ops::Deref for DerefB {
        type Target = f32;
        fn deref(&self) -> &f32 {
            let _marker = 10.0_f32;
            &self.1
        }
    }
    pub mod a {
        use super::DerefA as W;
        #[op_runtime::op(name = "test/holes/deref", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| *W(*v + 1.0, *v * 10.0)).collect()
        }
    }
    pub mod b {
        use super::DerefB as W;
        #[op_runtime::op(name = "test/holes/deref", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| *W(*v + 1.0, *v * 10.0)).collect()
        }
    }
}

/// `t[i]` through `impl Index`.
pub mod index {
    pub struct IndexA(pub f32, pub f32);
    impl std::ops::Index<usize> for IndexA {
        type Output = f32;
        fn index(&self, _i: usize) -> &f32 {
            let _marker = 1.0_f32;
            &self.0
        }
    }
    pub struct IndexB(pub f32, pub f32);
    impl std::ops::Index<usize> for IndexB {
        type Output = f32;
        fn index(&self, _i: usize) -> &f32 {
            let _marker = 10.0_f32;
            &self.1
        }
    }
    pub mod a {
        use super::IndexA as W;
        #[op_runtime::op(name = "test/holes/index", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| W(*v + 1.0, *v * 10.0)[0]).collect()
        }
    }
    pub mod b {
        use super::IndexB as W;
        #[op_runtime::op(name = "test/holes/index", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| W(*v + 1.0, *v * 10.0)[0]).collect()
        }
    }
}

/// `for d in w` through `impl Iterator`.
pub mod iterator {
    pub struct IterA(pub Vec<f32>, pub usize);
    impl Iterator for IterA {
        type Item = f32;
        fn next(&mut self) -> Option<f32> {
            let v = *self.0.get(self.1)?;
            self.1 += 1;
            Some(v + 1.0_f32)
        }
    }
    pub struct IterB(pub Vec<f32>, pub usize);
    impl Iterator for IterB {
        type Item = f32;
        fn next(&mut self) -> Option<f32> {
            let v = *self.0.get(self.1)?;
            self.1 += 1;
            Some(v * 10.0_f32)
        }
    }
    pub mod a {
        use super::IterA as W;
        #[op_runtime::op(name = "test/holes/iterator", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            let mut out = Vec::new();
            for d in W(x.to_vec(), 0) {
                out.push(d);
            }
            out
        }
    }
    pub mod b {
        use super::IterB as W;
        #[op_runtime::op(name = "test/holes/iterator", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            let mut out = Vec::new();
            for d in W(x.to_vec(), 0) {
                out.push(d);
            }
            out
        }
    }
}

/// `a == b` through `impl PartialEq`.
pub mod partial_eq {
    pub struct EqA(pub f32);
    impl PartialEq for EqA {
        fn eq(&self, _o: &EqA) -> bool {
            1.0_f32 > 0.0
        }
    }
    pub struct EqB(pub f32);
    impl PartialEq for EqB {
        fn eq(&self, _o: &EqB) -> bool {
            10.0_f32 < 0.0
        }
    }
    pub mod a {
        use super::EqA as W;
        #[op_runtime::op(name = "test/holes/partial_eq", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| if W(*v) == W(0.0) { *v + 1.0 } else { *v * 10.0 }).collect()
        }
    }
    pub mod b {
        use super::EqB as W;
        #[op_runtime::op(name = "test/holes/partial_eq", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| if W(*v) == W(0.0) { *v + 1.0 } else { *v * 10.0 }).collect()
        }
    }
}

/// `.into()` through `impl From`.
pub mod from {
    pub struct FromA(pub f32);
    impl From<FromA> for f32 {
        fn from(w: FromA) -> f32 {
            w.0 + 1.0_f32
        }
    }
    pub struct FromB(pub f32);
    impl From<FromB> for f32 {
        fn from(w: FromB) -> f32 {
            w.0 * 10.0_f32
        }
    }
    pub mod a {
        use super::FromA as W;
        #[op_runtime::op(name = "test/holes/from", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| -> f32 { W(*v).into() }).collect()
        }
    }
    pub mod b {
        use super::FromB as W;
        #[op_runtime::op(name = "test/holes/from", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| -> f32 { W(*v).into() }).collect()
        }
    }
}

/// The same two helpers in both modules, their `cfg` attributes swapped (this file is compiled
/// as a test: `cfg(test)` holds).
pub mod cfg_swap {
    pub mod a {
        #[cfg(test)]
        fn helper(v: f32) -> f32 {
            v + 1.0_f32
        }
        #[cfg(not(test))]
        fn helper(v: f32) -> f32 {
            v * 10.0_f32
        }
        #[op_runtime::op(name = "test/holes/cfg_swap", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| helper(*v)).collect()
        }
    }
    pub mod b {
        #[cfg(not(test))]
        fn helper(v: f32) -> f32 {
            v + 1.0_f32
        }
        #[cfg(test)]
        fn helper(v: f32) -> f32 {
            v * 10.0_f32
        }
        #[op_runtime::op(name = "test/holes/cfg_swap", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| helper(*v)).collect()
        }
    }
}

/// Two inline modules of one file, each declaring `twin` over its own `helper`.
pub mod wrong_module {
    pub mod a {
        fn helper(v: f32) -> f32 {
            v + 1.0_f32
        }
        #[op_runtime::op(name = "test/holes/wrong_module", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| helper(*v)).collect()
        }
    }
    pub mod b {
        fn helper(v: f32) -> f32 {
            v * 10.0_f32
        }
        #[op_runtime::op(name = "test/holes/wrong_module", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
        pub fn twin(x: &[f32]) -> Vec<f32> {
            x.iter().map(|v| helper(*v)).collect()
        }
    }
}

/// A reference that tests a feature this package does not have, and one that tests `test`.
pub mod cfgs {
    #[op_runtime::op(name = "test/holes/cfg_feature", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
    pub fn feature(x: &[f32]) -> Vec<f32> {
        x.iter().map(|v| if cfg!(feature = "identity_fixture_never_on") { *v } else { *v + 1.0 }).collect()
    }
    #[op_runtime::op(name = "test/holes/cfg_test", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
    pub fn test(x: &[f32]) -> Vec<f32> {
        x.iter().map(|v| if cfg!(test) { *v + 1.0 } else { *v }).collect()
    }
}

/// A reference that names a path dependency (`op_runtime`, a crate of this workspace).
pub mod path_dep {
    #[op_runtime::op(name = "test/holes/path_dep", version = 1, signature(x: f32[n]) -> f32[n], category = elementwise, tolerance = ulp(0), backward = none)]
    pub fn generic<T: op_runtime::Real>(x: &[T]) -> Vec<T> {
        x.iter().map(|v| *v + T::one()).collect()
    }
}
