//! Builtin modules.
