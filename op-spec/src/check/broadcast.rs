//! The rule about `broadcast = numpy`: which signatures may broadcast. Reads the signature
//! only; the shapes a call passes are the runtime's to check (`op_contract::contract::broadcast_shapes`).

use crate::ctxt::Ctxt;
use crate::model::*;

// Rule: `broadcast = numpy` declares an elementwise op whose operands may have any shapes that
// broadcast together: the signature describes it on its operands flattened, so every tensor
// (inputs and outputs) is `[n]` for one bare symbol `n`, with at least two tensor inputs (a
// single operand has nothing to broadcast against), and the outputs have static shapes.
pub(super) fn check_broadcast_signature(cx: &Ctxt, attr: &OpAttr, sig: &SSignature) {
    let Some(b) = &attr.broadcast else { return };
    if sig.gaps.args {
        return; // the argument that did not parse has its own error
    }
    if attr.output.as_ref().is_some_and(|o| !matches!(o, SShapeClass::Static(_))) {
        cx.error(
            b.span.error("`broadcast = numpy` needs static output shapes (the broadcast shape); remove `output = ...` or the broadcast"),
        );
        return;
    }
    let inputs: Vec<&STensor> = sig.args.iter().filter_map(|a| if let SArg::Tensor(t) = a { Some(t) } else { None }).collect();
    if inputs.len() < 2 {
        cx.error(b.span.error(format!(
            "`broadcast = numpy` combines two or more tensor inputs of different shapes, but the signature has {}; remove it",
            inputs.len()
        )));
        return;
    }
    let first = inputs[0].dims.first().and_then(|d| if let SExprKind::Sym(s) = &d.kind { Some(s.to_string()) } else { None });
    for t in inputs.iter().copied().chain(&sig.outputs) {
        let one_symbol = match (t.dims.as_slice(), &first) {
            ([d], Some(n)) => matches!(&d.kind, SExprKind::Sym(s) if s == n),
            _ => false,
        };
        if !one_symbol {
            let n = first.clone().unwrap_or_else(|| "n".into());
            cx.error(syn::Error::new(
                t.name.span(),
                format!(
                    "with `broadcast = numpy` every tensor is written `[{n}]` (the op on its operands flattened; a call passes any shapes \
                     that broadcast, and the outputs take the broadcast shape), but `{}` is `[{}]`",
                    t.name,
                    t.dims.iter().map(|d| d.to_expr().to_string()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ctxt::Ctxt;
    use quote::quote;

    fn errors(sig: proc_macro2::TokenStream, extra: proc_macro2::TokenStream) -> Vec<String> {
        let attr = quote!(name = "user/t/b", version = 1, #sig, category = elementwise, tolerance = ulp(1), backward = none, broadcast = numpy #extra);
        let cx = Ctxt::new();
        let parsed = crate::parse::parse_attr(&cx, attr);
        if let Some(sig) = &parsed.signature {
            super::check_broadcast_signature(&cx, &parsed, sig);
        }
        cx.check().err().map(|e| e.into_iter().map(|e| e.to_string()).collect()).unwrap_or_default()
    }

    #[test]
    fn an_elementwise_binary_signature_broadcasts() {
        assert!(errors(quote!(signature(a: f32[n], b: f32[n]) -> f32[n]), quote!()).is_empty());
        assert!(errors(quote!(signature(a: f32[n], b: f32[n], c: f32[n]) -> (f32[n], f32[n])), quote!()).is_empty());
    }

    #[test]
    fn other_signatures_are_refused_naming_the_tensor() {
        let e = errors(quote!(signature(a: f32[m, n], b: f32[n]) -> f32[m, n]), quote!());
        assert!(e.iter().any(|e| e.contains("but `a` is `[m, n]`")), "{e:?}");
        let e = errors(quote!(signature(a: f32[n], b: f32[n]) -> f32[n - 1]), quote!());
        assert!(e.iter().any(|e| e.contains("but `out` is `[n - 1]`")), "{e:?}");
        let e = errors(quote!(signature(a: f32[n], b: f32[m]) -> f32[n]), quote!());
        assert!(e.iter().any(|e| e.contains("but `b` is `[m]`")), "{e:?}");
        let e = errors(quote!(signature(x: f32[n]) -> f32[n]), quote!());
        assert!(e.iter().any(|e| e.contains("two or more tensor inputs")), "{e:?}");
    }
}
