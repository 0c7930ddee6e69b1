//! Host objects: values the evaluator holds without knowing what they are (tensors, dtypes,
//! meshes, kernels). `stdlib` implements this trait; `lang` only dispatches to it.

use super::args::CallArgs;
use super::value::Value;
use super::Interp;
use crate::ast::{BinOp, CmpOp, UnaryOp};
use crate::diag::Diagnostic;
use crate::span::Span;
use std::any::Any;

/// The result of an optional host operation: `None` means "not supported", and the evaluator
/// reports a type error naming both operand types.
pub type HostResult = Option<Result<Value, Diagnostic>>;
/// What [`HostObject::get_attr`] returns: `Ok(None)` when there is no such attribute.
pub type AttrResult = Result<Option<Value>, Diagnostic>;

#[allow(clippy::len_without_is_empty)] // `len()` mirrors Python's optional `__len__`
pub trait HostObject: Any {
    /// The type's name as users see it (`tensor`, `dtype`, `mesh`).
    fn type_name(&self) -> &'static str;
    /// `repr(x)`; also what the REPL shows for an expression statement.
    fn repr(&self) -> String;
    /// `str(x)`, used by `print`.
    fn str(&self) -> String {
        self.repr()
    }
    /// An HTML rendering for rich displays (Jupyter `text/html`, the REPL's tables); `None`:
    /// the `repr` text is all there is.
    fn html(&self) -> Option<String> {
        None
    }

    /// `x.name`. `this` is the value holding `self`, for building bound methods;
    /// `interp.call_span` holds the span of the attribute expression.
    /// `Ok(None)`: no such attribute (the evaluator reports E0100 with suggestions from
    /// [`HostObject::attr_names`]).
    fn get_attr(&self, _this: &Value, _name: &str, _interp: &mut Interp) -> AttrResult {
        Ok(None)
    }
    /// Attribute names, for suggestions and tab completion.
    fn attr_names(&self) -> Vec<&'static str> {
        Vec::new()
    }
    /// `x.name = value`.
    fn set_attr(&self, _name: &str, _value: Value) -> HostResult {
        None
    }
    /// `self op other` (or `other op self` when `reflected`).
    fn binary(&self, _op: BinOp, _other: &Value, _reflected: bool) -> HostResult {
        None
    }
    /// `self op other` for comparisons (or `other op self` when `reflected`).
    fn compare(&self, _op: CmpOp, _other: &Value, _reflected: bool) -> HostResult {
        None
    }
    fn unary(&self, _op: UnaryOp) -> HostResult {
        None
    }
    /// [`HostObject::binary`] with the span of the operator expression (the evaluator calls
    /// this one; tracers override it to record where an op came from).
    fn binary_at(&self, op: BinOp, other: &Value, reflected: bool, _span: Span) -> HostResult {
        self.binary(op, other, reflected)
    }
    /// [`HostObject::compare`] with the span of the comparison.
    fn compare_at(&self, op: CmpOp, other: &Value, reflected: bool, _span: Span) -> HostResult {
        self.compare(op, other, reflected)
    }
    /// [`HostObject::unary`] with the span of the operator expression.
    fn unary_at(&self, op: UnaryOp, _span: Span) -> HostResult {
        self.unary(op)
    }
    /// [`HostObject::getitem`] with the span of the subscript expression.
    fn getitem_at(&self, index: &Value, _span: Span) -> HostResult {
        self.getitem(index)
    }
    /// `bool(x)`, `if x:`.
    fn truthy(&self) -> Result<bool, Diagnostic> {
        Ok(true)
    }
    fn len(&self) -> Option<Result<usize, Diagnostic>> {
        None
    }
    /// `x[index]`; `index` is a `Value::Tuple` for `x[a, b]` and may hold `Value::Slice`s.
    fn getitem(&self, _index: &Value) -> HostResult {
        None
    }
    /// `x[index] = value`; `None`: the object does not support item assignment (E0101).
    fn setitem(&self, _index: &Value, _value: Value) -> Option<Result<(), Diagnostic>> {
        None
    }
    /// `for item in x`.
    fn iter(&self) -> Option<Result<Vec<Value>, Diagnostic>> {
        None
    }
    /// `x(args)`; `this` is the value holding `self`.
    /// The number this object stands for in a format spec (`f"{t:.2f}"` of a one-element
    /// tensor), if any.
    fn as_number(&self) -> Option<Value> {
        None
    }
    fn call(&self, _this: &Value, _interp: &mut Interp, _args: CallArgs) -> HostResult {
        None
    }
    /// `x == y` identity fallback for host objects that define no comparison.
    fn same(&self, other: &dyn HostObject) -> bool {
        std::ptr::eq(
            self as *const Self as *const u8,
            other as *const dyn HostObject as *const u8,
        )
    }
}
