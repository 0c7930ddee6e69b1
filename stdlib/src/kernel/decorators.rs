//! `@op.kernel` and `@autotune.autotune` as decorators that make kernel values.

use super::*;

pub(super) fn check_callable(v: &Value, span: Span, what: &str) -> Result<(), Diagnostic> {
    match v {
        Value::Function(_) => Ok(()),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("{what} decorates a function, not {}", other.type_name()),
        )
        .at(span)),
    }
}

/// `op.kernel`: the decorator.
pub fn kernel_decorator(session: Rc<Session>) -> Value {
    Value::native("kernel", "kernel(f)", move |_, args| {
        let a = args.bind("kernel", &["f"], &[])?;
        let Some(f) = a.into_iter().flatten().next() else {
            return Ok(Value::None);
        };
        if f.value.downcast::<KernelObj>().is_some() {
            return Ok(f.value);
        }
        check_callable(&f.value, f.span, "@op.kernel")?;
        Ok(Value::host(KernelObj::new(f.value, session.clone())))
    })
}

pub(super) fn with_autotune(
    session: &Rc<Session>,
    f: Value,
    span: Span,
    cache: Option<String>,
) -> Result<Value, Diagnostic> {
    if let Some(k) = f.downcast::<KernelObj>() {
        *k.autotune_cache.borrow_mut() = cache;
        k.autotune.set(true);
        return Ok(f);
    }
    check_callable(&f, span, "@op.autotune")?;
    let k = KernelObj::new(f, session.clone());
    *k.autotune_cache.borrow_mut() = cache;
    k.autotune.set(true);
    Ok(Value::host(k))
}

/// `op.autotune(cache=None)`: a decorator factory (or, given a function, the decorator itself);
/// alone it implies `@op.kernel`. The kernel is tuned on its first call per signature.
pub fn autotune_decorator(session: Rc<Session>) -> Value {
    Value::native("autotune", "autotune(cache=None)", move |_, args| {
        if args.positional.len() == 1 && args.keywords.is_empty() {
            if let Some((f, s)) = args.positional.first() {
                if matches!(f, Value::Function(_)) || f.downcast::<KernelObj>().is_some() {
                    return with_autotune(&session, f.clone(), *s, None);
                }
            }
        }
        let a = args.bind("autotune", &[], &["cache"])?;
        let cache = match a.into_iter().flatten().next() {
            Some(x) => match &x.value {
                Value::Str(s) if crate::autotune::valid_cache_name(s) => Some(s.to_string()),
                Value::Str(s) => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!(
                            "cache name '{s}' must be a plain file name (letters, digits, _ - .)"
                        ),
                    )
                    .at(x.span)
                    .with_help("the cache is the file NAME.json in $TESSERA_CACHE_DIR"))
                }
                Value::None => None,
                other => {
                    return Err(Diagnostic::new(
                        Code::E0101,
                        format!("cache must be a str, not {}", other.type_name()),
                    )
                    .at(x.span))
                }
            },
            None => None,
        };
        let s = session.clone();
        Ok(Value::native(
            "autotune",
            "autotune decorator",
            move |_, args| {
                let a = args.bind("autotune", &["f"], &[])?;
                let Some(f) = a.into_iter().flatten().next() else {
                    return Ok(Value::None);
                };
                with_autotune(&s, f.value, f.span, cache.clone())
            },
        ))
    })
}
