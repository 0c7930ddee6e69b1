//! The `target` module (SPEC §6): `target.set("sm_90")`, `target.current()`, `target.info()`,
//! the multi-GPU system of the mesh cost model (`target.set_system("gb200-nvl72")`,
//! `target.system()`),
//! and the device kernels run on: `target.set_device(NAME)` (`auto` or a name of [`registry::DEVICES`]), `target.device()`
//! (the script form of `--device` and the REPL's `:device`; docs/decisions.md).

use crate::session::Session;
use std::rc::Rc;
use tessera_compiler::backend::ptx::Target;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::{Module, Value};
use tessera_runtime::device::registry;

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

/// `target.info()`: the target's limits and peak rates. Prints as a table; each figure is also
/// an attribute (`target.info().sm_count`).
pub struct TargetInfo(pub Target);

impl TargetInfo {
    /// (attribute, shown name, value).
    fn items(&self) -> Vec<(&'static str, &'static str, Value)> {
        let t = self.0;
        let sp = t.spec();
        let l = t.limits();
        let f = Value::Float;
        let i = |v: u64| Value::Int(i64::try_from(v).unwrap_or(i64::MAX));
        let p = &sp.peak_tflops;
        vec![
            ("name", "target", Value::str(t.name())),
            ("gpu", "GPU (rates)", Value::str(sp.gpu)),
            ("sm_count", "SMs", i(sp.sm_count.into())),
            (
                "max_threads_per_block",
                "threads / block",
                i(l.max_threads_per_block.into()),
            ),
            (
                "max_threads_per_sm",
                "threads / SM",
                i(sp.max_threads_per_sm.into()),
            ),
            (
                "max_warps_per_sm",
                "warps / SM",
                i(sp.max_warps_per_sm.into()),
            ),
            (
                "max_blocks_per_sm",
                "blocks / SM",
                i(sp.max_blocks_per_sm.into()),
            ),
            ("regs_per_sm", "registers / SM", i(sp.regs_per_sm.into())),
            (
                "max_regs_per_block",
                "registers / block",
                i(sp.max_regs_per_block.into()),
            ),
            (
                "max_regs_per_thread",
                "registers / thread",
                i(sp.max_regs_per_thread.into()),
            ),
            (
                "reg_alloc_unit",
                "register allocation unit",
                i(sp.reg_alloc_unit.into()),
            ),
            (
                "warp_alloc_granularity",
                "warp allocation granularity",
                i(sp.warp_alloc_granularity.into()),
            ),
            (
                "smem_per_sm",
                "shared memory / SM (B)",
                i(sp.smem_per_sm.into()),
            ),
            (
                "static_smem_per_block",
                "static shared memory / block (B)",
                i(l.static_shared_bytes.into()),
            ),
            (
                "max_smem_per_block",
                "shared memory / block, opt-in (B)",
                i(sp.max_smem_per_block.into()),
            ),
            (
                "smem_alloc_unit",
                "shared memory allocation unit (B)",
                i(sp.smem_alloc_unit.into()),
            ),
            (
                "reserved_smem_per_block",
                "reserved shared memory / block (B)",
                i(sp.reserved_smem_per_block.into()),
            ),
            ("warp_size", "warp size", i(l.warp_size.into())),
            (
                "mma_shapes",
                "MMA shapes",
                Value::list(sp.mma_shapes.iter().map(|m| Value::str(m)).collect()),
            ),
            ("fp64_tflops", "peak fp64 (TFLOP/s)", f(p.fp64)),
            ("fp32_tflops", "peak fp32 (TFLOP/s)", f(p.fp32)),
            ("tf32_tflops", "peak tf32 tensor (TFLOP/s)", f(p.tf32)),
            ("bf16_tflops", "peak bf16/fp16 tensor (TFLOP/s)", f(p.bf16)),
            (
                "fp8_tflops",
                "peak fp8 tensor (TFLOP/s)",
                p.fp8.map_or(Value::None, f),
            ),
            ("hbm_gbps", "HBM (GB/s)", f(sp.hbm_gbps)),
            ("l2_bytes", "L2 (B)", i(sp.l2_bytes)),
            ("nvlink_gbps", "NVLink (GB/s)", f(sp.nvlink_gbps)),
        ]
    }
    fn table(&self) -> crate::table::TableObj {
        let mut t = crate::table::Table::new(&["property", "value"]);
        t.title = Some(format!("target {} ({})", self.0.name(), self.0.spec().gpu));
        for (_, shown, v) in self.items().into_iter().skip(2) {
            let text = match &v {
                Value::List(l) => l
                    .borrow()
                    .iter()
                    .map(|x| x.to_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                Value::None => "-".to_string(),
                other => other.to_str(),
            };
            t.rows.push(vec![shown.to_string(), text]);
        }
        crate::table::TableObj {
            type_name: "target_info",
            lines: vec![],
            parts: vec![t],
        }
    }
}

impl tessera_lang::eval::HostObject for TargetInfo {
    fn type_name(&self) -> &'static str {
        "target_info"
    }
    fn repr(&self) -> String {
        self.table().text()
    }
    fn html(&self) -> Option<String> {
        Some(self.table().html())
    }
    fn get_attr(
        &self,
        _this: &Value,
        name: &str,
        _it: &mut tessera_lang::eval::Interp,
    ) -> Result<Option<Value>, Diagnostic> {
        Ok(self
            .items()
            .into_iter()
            .find(|(a, _, _)| *a == name)
            .map(|(_, _, v)| v))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        self.items().into_iter().map(|(a, _, _)| a).collect()
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
            let t = crate::session::parse_target(&name).map_err(|d| d.at(x.span))?;
            s.target.set(t);
            // a named system keeps its GPUs' target
            if s.system.get().is_some_and(|sys| sys.target != t) {
                s.system.set(None);
            }
            Ok(Value::None)
        }),
    );
    let s = session.clone();
    m.set(
        "set_system",
        Value::native("set_system", "set_system(name)", move |_, args| {
            let a = args.bind("set_system", &["name"], &[])?;
            let Some(x) = a.into_iter().flatten().next() else {
                return Ok(Value::None);
            };
            let name = str_arg(&x.value, "name", x.span)?;
            let sys = tessera_compiler::cost::system::System::parse(&name).ok_or_else(|| {
                let known: Vec<&str> = tessera_compiler::cost::system::systems()
                    .iter()
                    .map(|s| s.name)
                    .collect();
                Diagnostic::new(Code::E0101, format!("unknown system '{name}'"))
                    .at(x.span)
                    .with_help(format!("systems are {}", known.join(", ")))
            })?;
            s.target.set(sys.target);
            s.system.set(Some(sys));
            Ok(Value::None)
        }),
    );
    let s = session.clone();
    m.set(
        "system",
        Value::native("system", "system()", move |_, args| {
            args.bind("system", &[], &[])?;
            let sys = s.system();
            Ok(Value::str(&format!(
                "{} ({} × {}, {} per NVLink domain, NVLink {} GB/s, scale-out {} GB/s per GPU)",
                sys.name,
                sys.spec.gpu,
                sys.target.name(),
                sys.domain,
                sys.nvlink_gbps,
                sys.scaleout_gbps
            )))
        }),
    );
    let s = session.clone();
    m.set(
        "current",
        Value::native("current", "current()", move |_, args| {
            args.bind("current", &[], &[])?;
            Ok(Value::str(s.target.get().name()))
        }),
    );
    let s = session.clone();
    m.set(
        "info",
        Value::native("info", "info()", move |_, args| {
            args.bind("info", &[], &[])?;
            Ok(Value::host(TargetInfo(s.target.get())))
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
            let want = match registry::find(&name) {
                _ if name == registry::AUTO => None,
                Some(d) => Some(d),
                None => return Err(registry::unknown(&name).at(x.span)),
            };
            s.set_device(want).map_err(|d| {
                let now = s.device();
                d.at(x.span)
                    .with_note(format!("kernels keep running on the {now} device"))
            })?;
            Ok(Value::None)
        }),
    );
    let s = session;
    m.set(
        "device",
        Value::native("device", "device()", move |_, args| {
            args.bind("device", &[], &[])?;
            Ok(Value::str(s.device().name))
        }),
    );
    m
}
