//! Parameter lists: from what the grammar matched to the AST's parameters, checked for order,
//! kinds and duplicates.

use super::grammar::RawParam;
use crate::ast::{Param, ParamKind};
use crate::span::Span;

/// Parameters as the AST wants them, or the first problem with them.
pub(crate) fn check_params(
    raw: Vec<RawParam>,
) -> Result<Vec<Param>, (Span, String, Option<&'static str>)> {
    let mut out: Vec<Param> = Vec::with_capacity(raw.len());
    let mut kw_only = false;
    let mut seen_default = false;
    let mut bare_star: Option<Span> = None;
    for p in raw {
        match p {
            RawParam::DoubleStar(s) => {
                return Err((
                    s,
                    "`**kwargs` parameters are not supported in Tessera".into(),
                    None,
                ))
            }
            RawParam::Slash(s) => {
                return Err((
                    s,
                    "positional-only parameters (`/`) are not supported in Tessera".into(),
                    None,
                ))
            }
            RawParam::Star(name, s) => {
                if kw_only {
                    return Err((
                        s,
                        "`*` can appear only once in a parameter list".into(),
                        None,
                    ));
                }
                kw_only = true;
                match name {
                    Some(name) => out.push(Param {
                        name,
                        default: None,
                        kind: ParamKind::VarArgs,
                    }),
                    None => bare_star = Some(s),
                }
            }
            RawParam::Named(name, default) => {
                if out.iter().any(|q| q.name.name == name.name) {
                    return Err((
                        name.span,
                        format!("duplicate parameter `{}`", name.name),
                        None,
                    ));
                }
                if kw_only {
                    bare_star = None;
                    out.push(Param {
                        name,
                        default,
                        kind: ParamKind::KeywordOnly,
                    });
                } else {
                    if default.is_some() {
                        seen_default = true;
                    } else if seen_default {
                        return Err((
                            name.span,
                            "a parameter without a default follows a parameter with a default"
                                .into(),
                            Some(
                                "give this parameter a default too, or move it before the defaults",
                            ),
                        ));
                    }
                    out.push(Param {
                        name,
                        default,
                        kind: ParamKind::Normal,
                    });
                }
            }
        }
    }
    if let Some(s) = bare_star {
        return Err((
            s,
            "a bare `*` must be followed by keyword-only parameters".into(),
            None,
        ));
    }
    // names also clash with `*args`
    Ok(out)
}
