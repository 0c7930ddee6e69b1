//! Where a tensor lives (SPEC §4, "Devices"): `t.device`, `t.to(device)` and the E0800 of
//! operands on two devices.
//!
//! A tensor value carries a [`Place`]: a registry device and whether it was placed there by
//! `t.to(device)` (committed) or only made there. As JAX places arrays, a tensor made without a
//! placement (a factory, an op on such tensors) is made on the session's device and follows it:
//! an op or kernel call whose tensor operands are all unplaced runs on the session's device now,
//! and its results are unplaced there. A placed operand pins the call to its device (a kernel
//! runs there) and its results are placed there too; placed operands on two devices are E0800.
//! Python numbers and 0-d tensors go with any device.
//!
//! Every tensor's data is on the host for now, so a placement moves nothing.

use super::TensorObj;
use std::cell::Cell;
use tessera_lang::diag::{Code, Diagnostic};
use tessera_lang::eval::Value;
use tessera_runtime::device::registry::{self, Entry, DEVICES};

/// A tensor's device, and whether `t.to(device)` put it there.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Place {
    pub device: &'static Entry,
    pub committed: bool,
}

thread_local! {
    /// While an op or kernel with placed operands runs: where its results go.
    static SCOPE: Cell<Option<Place>> = const { Cell::new(None) };
}

/// Where a tensor made now goes: the placed device of the op running, else the session's
/// device (unplaced).
pub fn current() -> Place {
    if let Some(p) = SCOPE.with(Cell::get) {
        return p;
    }
    let device = crate::session::thread_engine().map(|e| e.current());
    Place {
        device: device.unwrap_or_else(registry::cpu),
        committed: false,
    }
}

/// Runs `f` with the tensors it makes placed at `p` (`None`: as made).
pub fn within<R>(p: Option<Place>, f: impl FnOnce() -> R) -> R {
    let Some(p) = p else {
        return f();
    };
    let prev = SCOPE.with(|s| s.replace(Some(p)));
    let r = f();
    SCOPE.with(|s| s.set(prev));
    r
}

/// Opens device `e` in the session's engine for `t.to(...)`: E0800 naming it when it cannot
/// be used here.
pub fn open(e: &'static Entry) -> Result<(), Diagnostic> {
    let Some(engine) = crate::session::thread_engine() else {
        return Ok(());
    };
    engine.open(e).map_err(|u| {
        let how = format!("t.to(\"{}\")", device_name(e));
        u.device.unavailable(&how, &u.why)
    })
}

/// The name `t.device` shows: `"cpu"`, `"emu"`, and a GPU with its ordinal (`"cuda:0"`,
/// `"vulkan:0"`; a session opens device 0 of each).
pub fn device_name(e: &Entry) -> String {
    if e.hardware.is_some() {
        format!("{}:0", e.name)
    } else {
        e.name.to_string()
    }
}

/// The registry device a `t.to(...)` string names: a registry name, optionally with an
/// ordinal (`"cuda"`, `"cuda:0"`). `None`: not a device name. `Some(Err)`: the device's family
/// but not one this session has (`"cuda:1"`, `"cpu:3"`): E0800.
pub fn parse_device(s: &str) -> Option<Result<&'static Entry, Diagnostic>> {
    let (name, ordinal) = match s.split_once(':') {
        Some((n, o)) => (n, Some(o)),
        None => (s, None),
    };
    let e = registry::find(name)?;
    Some(match ordinal {
        None => Ok(e),
        Some(o) if e.hardware.is_some() && o == "0" => Ok(e),
        Some(_) => Err(
            Diagnostic::new(Code::E0800, format!("unknown device '{s}'"))
                .with_label("no such device")
                .with_help(format!(
                    "devices are {} (a session opens device 0 of a GPU)",
                    device_list()
                )),
        ),
    })
}

/// The devices as `t.device` names them: "cpu, emu, cuda:0, vulkan:0".
pub fn device_list() -> String {
    DEVICES
        .iter()
        .map(|e| device_name(e))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The placed tensors among `v` (a list's or tuple's items included): placement and number of
/// dimensions.
fn placed_in(v: &Value, out: &mut Vec<(Place, usize)>) {
    let mut see = |v: &Value| {
        if let Some(o) = v.downcast::<TensorObj>() {
            if let Some(p) = o.pin() {
                out.push((p, o.ndim()));
            }
        }
    };
    match v {
        Value::List(l) => l.borrow().iter().for_each(&mut see),
        Value::Tuple(t) => t.iter().for_each(&mut see),
        v => see(v),
    }
}

/// Where a call on placed operands `placed` (placement, number of dimensions) runs: the device
/// of those of one or more dimensions, else of the first 0-d one; E0800 naming both devices
/// when two of one or more dimensions are on different devices.
pub fn combine(placed: &[(Place, usize)]) -> Result<Option<Place>, Diagnostic> {
    let mut found: Option<Place> = None;
    for &(p, _) in placed.iter().filter(|(_, n)| *n > 0) {
        match found {
            Some(f) if f.device != p.device => return Err(mixed(f.device, p.device)),
            _ => found = found.or(Some(p)),
        }
    }
    Ok(found.or_else(|| placed.first().map(|(p, _)| *p)))
}

/// Where a call on the operands `values` runs ([`combine`]).
pub fn of_operands<'a>(
    values: impl IntoIterator<Item = &'a Value>,
) -> Result<Option<Place>, Diagnostic> {
    let mut placed = Vec::new();
    for v in values {
        placed_in(v, &mut placed);
    }
    combine(&placed)
}

/// Where an op of tensor `me` with the operand `other` runs ([`combine`]).
pub fn of_pair(me: &TensorObj, other: &Value) -> Result<Option<Place>, Diagnostic> {
    let mut placed = Vec::new();
    if let Some(p) = me.pin() {
        placed.push((p, me.ndim()));
    }
    placed_in(other, &mut placed);
    combine(&placed)
}

/// E0800: operands on devices `a` and `b`.
pub fn mixed(a: &Entry, b: &Entry) -> Diagnostic {
    let (a, b) = (device_name(a), device_name(b));
    Diagnostic::new(
        Code::E0800,
        format!("operands on two devices: one on {a}, one on {b}"),
    )
    .with_label("operands on different devices")
    .with_help(format!(
        "move one of them first: `x.to(\"{a}\")` or `x.to(\"{b}\")`"
    ))
}
