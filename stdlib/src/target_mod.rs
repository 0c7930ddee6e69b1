//! The `target` module (SPEC §6): `target.set("sm_90")`, `target.current()`, `target.info()`,
//! and the device kernels run on: `target.set_device("cpu"|"emu")`, `target.device()`
//! (the script form of `--device` and the REPL's `:device`; docs/decisions.md).

use crate::kernel::Session;
use std::rc::Rc;
use tessera_compiler::target::Target;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Module, Value};

fn str_arg(v: &Value, what: &str, span: tessera_lang::Span) -> Result<String, Diagnostic> {
    match v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("{what} must be a str, not {}", other.type_name()),
        )
        .at(span)),
    }
}

/// Builds the `target` module.
pub fn module(session: Rc<Session>) -> Module {
    let m = Module::new(
        "target",
        "the compilation target and the device kernels run on",
    );
    let s = session.clone();
    m.set(
        "set",
        Value::native("set", "set(name)", move |_, args| {
            let a = args.bind("set", &["name"], &[])?;
            let Some(x) = a.into_iter().flatten().next() else {
                return Ok(Value::None);
            };
            let name = str_arg(&x.value, "name", x.span)?;
            if Target::parse(&name).is_none() {
                return Err(
                    Diagnostic::new(Code::E0101, format!("unknown target '{name}'"))
                        .at(x.span)
                        .with_help("targets are sm_80, sm_90, sm_90a, sm_100"),
                );
            }
            *s.target.borrow_mut() = name;
            Ok(Value::None)
        }),
    );
    let s = session.clone();
    m.set(
        "current",
        Value::native("current", "current()", move |_, args| {
            args.bind("current", &[], &[])?;
            Ok(Value::str(&s.target.borrow()))
        }),
    );
    let s = session.clone();
    m.set(
        "info",
        Value::native("info", "info()", move |_, args| {
            args.bind("info", &[], &[])?;
            let t = Target::parse(&s.target.borrow()).unwrap_or(Target::Sm90);
            let l = t.limits();
            Ok(Value::str(&format!(
                "{}: max_threads_per_block={}, static_shared_bytes={}, max_shared_bytes={}, max_registers_per_thread={}, warp_size={}",
                t.name(),
                l.max_threads_per_block,
                l.static_shared_bytes,
                l.max_dynamic_shared_bytes,
                l.max_registers_per_thread,
                l.warp_size
            )))
        }),
    );
    let s = session.clone();
    m.set(
        "set_device",
        Value::native("set_device", "set_device(name)", move |_, args| {
            let a = args.bind("set_device", &["name"], &[])?;
            let Some(x) = a.into_iter().flatten().next() else {
                return Ok(Value::None);
            };
            let name = str_arg(&x.value, "name", x.span)?;
            let dev = match name.as_str() {
                "cpu" | "auto" => "cpu",
                "emu" => "emu",
                "cuda" => {
                    return Err(Diagnostic::new(
                        Code::E0800,
                        "no usable CUDA device in this build; kernels keep running on the cpu",
                    )
                    .at(x.span))
                }
                _ => {
                    return Err(
                        Diagnostic::new(Code::E0101, format!("unknown device '{name}'"))
                            .at(x.span)
                            .with_help("devices are auto, cpu, emu, cuda"),
                    )
                }
            };
            *s.device.borrow_mut() = dev.to_string();
            Ok(Value::None)
        }),
    );
    let s = session;
    m.set(
        "device",
        Value::native("device", "device()", move |_, args| {
            args.bind("device", &[], &[])?;
            Ok(Value::str(&s.device.borrow()))
        }),
    );
    m
}
