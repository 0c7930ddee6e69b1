//! Kernel and parameter names as PTX identifiers (and portable file names).

/// `name` as a PTX identifier (`[A-Za-z_$][A-Za-z0-9_$]*`): a name that already is one (every
/// ASCII Python identifier but `_`) is returned unchanged; any other is mangled, each run of
/// characters outside `[A-Za-z0-9_]` written as `$` + `u<hex code point>` per character + `$`
/// (`核函数_0` → `$u6838u51fdu6570$_0`), with a leading `$$` when the result would start with
/// a digit, be `_` or be empty. The mangled form always holds a `$`, which no Python
/// identifier does, and decodes back to the name, so names of scripts never collide; it is
/// also a portable file name. Applying it twice changes nothing.
pub fn ptx_name(name: &str) -> std::borrow::Cow<'_, str> {
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let valid = match name.chars().next() {
        Some(c) => {
            (c.is_ascii_alphabetic() || c == '_' || c == '$')
                && name.chars().all(|c| keep(c) || c == '$')
                && name != "_"
                && name != "$"
        }
        None => false,
    };
    if valid {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::new();
    let mut in_run = false;
    for c in name.chars() {
        if keep(c) {
            if in_run {
                out.push('$');
                in_run = false;
            }
            out.push(c);
        } else {
            if !in_run {
                out.push('$');
                in_run = true;
            }
            out.push_str(&format!("u{:x}", u32::from(c)));
        }
    }
    if in_run {
        out.push('$');
    }
    if out.is_empty() || out == "_" || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "$$");
    }
    std::borrow::Cow::Owned(out)
}
