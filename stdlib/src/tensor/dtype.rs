//! Dtype values (`op.bf16`, `t.dtype`) and dtype arguments.

use super::*;

/// A dtype value (`op.bf16`, `t.dtype`).
pub struct DTypeObj(pub DType);

/// A dtype argument: a dtype value or a name (`"bf16"`, `"float32"`).
pub fn dtype_arg(v: &Value, span: Span) -> Result<DType, Diagnostic> {
    if let Some(d) = v.downcast::<DTypeObj>() {
        return Ok(d.0);
    }
    match v {
        Value::Str(s) => DType::parse(s).ok_or_else(|| {
            let mut d = Diagnostic::new(Code::E0201, format!("unknown dtype '{s}'"))
                .at(span)
                .with_label("not a dtype");
            let names: Vec<&str> = ALL_DTYPES.iter().map(|d| d.name()).collect();
            if let Some(sug) = suggest(s, names.iter().copied()) {
                d = d.with_help(format!("did you mean `{sug}`?"));
            } else {
                d = d.with_help(format!("dtypes are {}", names.join(", ")));
            }
            d
        }),
        other => Err(Diagnostic::new(
            Code::E0101,
            format!("expected a dtype, got {}", other.type_name()),
        )
        .at(span)),
    }
}

impl HostObject for DTypeObj {
    fn type_name(&self) -> &'static str {
        "dtype"
    }
    fn repr(&self) -> String {
        self.0.name().to_string()
    }
    fn compare(&self, op: CmpOp, other: &Value, _reflected: bool) -> HostResult {
        let o = match other {
            Value::Str(s) => DType::parse(s),
            _ => other.downcast::<DTypeObj>().map(|d| d.0),
        };
        match op {
            CmpOp::Eq => Some(Ok(Value::Bool(o == Some(self.0)))),
            CmpOp::Ne => Some(Ok(Value::Bool(o != Some(self.0)))),
            _ => None,
        }
    }
    fn get_attr(&self, _this: &Value, name: &str, _: &mut Interp) -> AttrResult {
        Ok(match name {
            "name" => Some(Value::str(self.0.name())),
            "itemsize" => Some(Value::Int(self.0.size_bytes() as i64)),
            "is_float" => Some(Value::Bool(self.0.is_float())),
            _ => None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["name", "itemsize", "is_float"]
    }
    fn same(&self, other: &dyn HostObject) -> bool {
        (other as &dyn Any)
            .downcast_ref::<DTypeObj>()
            .is_some_and(|d| d.0 == self.0)
    }
}
