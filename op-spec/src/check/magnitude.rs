//! The rule about `magnitude(...)`: which inputs a range may name, and that it meets the
//! input's domain. Reads the attribute only.

use crate::ctxt::Ctxt;
use crate::model::*;

// Rule: a magnitude range names a float tensor input of the signature, and some value of the
// input's domain has a magnitude in it (else gradcheck could draw nothing there).
pub(super) fn check_magnitude_inputs(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    for m in &attr.magnitude {
        let name = m.input.to_string();
        let why = match sig.args.iter().find(|a| *a.ident() == m.input) {
            Some(SArg::Tensor(t)) if t.dtype.value.is_float() => {
                let domain = attr.domain.iter().find(|d| d.input == m.input).map(SDomain::to_domain);
                if m.to_magnitude().meets(domain.as_ref()) {
                    continue;
                }
                let d = domain.map(|d| d.to_string()).unwrap_or_default();
                cx.error(m.span.error(format!(
                    "the magnitude range of `{name}` lies outside its domain `{d}`: no value has a magnitude in it; widen the range or drop it"
                )));
                continue;
            }
            Some(SArg::Tensor(t)) => format!("`{name}` is a `{}` tensor", t.dtype.value),
            Some(SArg::Param(_)) => format!("`{name}` is a parameter (bound it with a `where` constraint instead)"),
            // An argument that did not parse has its own error.
            Some(SArg::Broken(_)) => continue,
            None => format!("`{name}` is not an input of the signature"),
        };
        cx.error(syn::Error::new(
            m.input.span(),
            format!("`magnitude(...)` ranges float tensor inputs, e.g. `magnitude(x: 1e-3..10)`, but {why}"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use crate::check::tests::errs;
    use quote::quote;

    fn check(domain: proc_macro2::TokenStream, magnitude: proc_macro2::TokenStream) -> Vec<String> {
        errs(
            quote!(name = "t/m", version = 1, signature(x: f32[n], i: i32[n], w: u32) -> f32[n],
                category = elementwise, tolerance = ulp(1), backward = none, #domain #magnitude),
            quote!(
                pub fn m<T: Copy>(x: &[T], i: &[i32], w: u32) -> Vec<T> {
                    x.to_vec()
                }
            ),
        )
    }

    #[test]
    fn a_range_names_a_float_input_and_meets_its_domain() {
        assert!(check(quote!(), quote!(magnitude(x: 1e-3..10))).is_empty());
        assert!(check(quote!(domain(x > 0),), quote!(magnitude(x: 1e-3..10))).is_empty());
        // `-1 <= x <= -0.5` holds magnitudes 0.5..1 on the negative side.
        assert!(check(quote!(domain(-1 <= x <= -0.5),), quote!(magnitude(x: 0.75..3))).is_empty());
        let one = |d, m| {
            let e = check(d, m);
            assert_eq!(e.len(), 1, "{e:?}");
            e[0].clone()
        };
        assert!(one(quote!(domain(0 < x < 1),), quote!(magnitude(x: 10..100))).contains("lies outside its domain"));
        // The ends count where the domain holds them: 2 is in `x >= 2`, not in `x > 2`.
        assert!(check(quote!(domain(x >= 2),), quote!(magnitude(x: 1..2))).is_empty());
        assert!(one(quote!(domain(x > 2),), quote!(magnitude(x: 1..2))).contains("lies outside its domain"));
        assert!(one(quote!(), quote!(magnitude(w: 1..2))).contains("`w` is a parameter"));
        assert!(one(quote!(), quote!(magnitude(i: 1..2))).contains("`i` is a `i32` tensor"));
        assert!(one(quote!(), quote!(magnitude(y: 1..2))).contains("`y` is not an input of the signature"));
    }
}
