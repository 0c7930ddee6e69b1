//! `tessera jupyter install`: writes the kernelspec `tessera` (kernel.json and a logo).

use serde_json::json;
use std::path::{Path, PathBuf};

/// The kernelspec's name (the directory under `kernels/`).
pub const KERNEL_NAME: &str = "tessera";

/// Where the kernelspec goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallTarget {
    /// The system-wide Jupyter data directory (`/usr/local/share/jupyter`), like
    /// `jupyter kernelspec install` without options.
    System,
    /// The user's Jupyter data directory (`$JUPYTER_DATA_DIR`, else `~/.local/share/jupyter` on
    /// Linux, `~/Library/Jupyter` on macOS).
    User,
    /// `PREFIX/share/jupyter` (a virtual environment or a private test prefix).
    Prefix(PathBuf),
}

/// The Jupyter data directory of `target`.
pub fn data_dir(target: &InstallTarget) -> Result<PathBuf, String> {
    match target {
        InstallTarget::System => jupyter_zmq_client::system_data_dirs()
            .into_iter()
            .next()
            .ok_or_else(|| "no system-wide Jupyter data directory on this platform".to_string()),
        InstallTarget::User => match std::env::var_os("JUPYTER_DATA_DIR") {
            Some(d) if !d.is_empty() => Ok(PathBuf::from(d)),
            _ => jupyter_zmq_client::user_data_dir()
                .map_err(|e| format!("cannot find the user's Jupyter data directory: {e}")),
        },
        InstallTarget::Prefix(p) => Ok(p.join("share").join("jupyter")),
    }
}

/// The content of kernel.json for a kernel started as `exe kernel --connection-file F`.
pub fn kernel_json(exe: &Path) -> serde_json::Value {
    json!({
        "argv": [exe.to_string_lossy(), "kernel", "--connection-file", "{connection_file}"],
        "display_name": "Tessera",
        "language": "tessera",
        "interrupt_mode": "message",
        "env": {},
        "metadata": {}
    })
}

/// A small square logo (SVG, used by JupyterLab's launcher).
const LOGO_SVG: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
<rect width="64" height="64" rx="10" fill="#1f2937"/>
<g fill="#38bdf8"><rect x="8" y="8" width="14" height="14"/><rect x="25" y="8" width="14" height="14" opacity="0.7"/><rect x="42" y="8" width="14" height="14" opacity="0.4"/>
<rect x="8" y="25" width="14" height="14" opacity="0.7"/><rect x="25" y="25" width="14" height="14"/><rect x="42" y="25" width="14" height="14" opacity="0.7"/>
<rect x="8" y="42" width="14" height="14" opacity="0.4"/><rect x="25" y="42" width="14" height="14" opacity="0.7"/><rect x="42" y="42" width="14" height="14"/></g>
</svg>
"##;

/// Installs the kernelspec for the binary `exe`; returns its directory.
pub fn install(target: &InstallTarget, exe: &Path) -> Result<PathBuf, String> {
    let dir = data_dir(target)?.join("kernels").join(KERNEL_NAME);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let text = serde_json::to_string_pretty(&kernel_json(exe))
        .map_err(|e| format!("cannot write kernel.json: {e}"))?;
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, body).map_err(|e| format!("cannot write {}: {e}", p.display()))
    };
    write("kernel.json", &(text + "\n"))?;
    write("logo-svg.svg", LOGO_SVG)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_into_a_prefix() {
        let tmp = std::env::temp_dir().join(format!("tessera-spec-{}", std::process::id()));
        let exe = Path::new("/opt/bin/tessera");
        let dir = install(&InstallTarget::Prefix(tmp.clone()), exe).expect("installed");
        assert_eq!(dir, tmp.join("share/jupyter/kernels/tessera"));
        let spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("kernel.json")).unwrap())
                .unwrap();
        assert_eq!(spec["language"], "tessera");
        assert_eq!(spec["interrupt_mode"], "message");
        assert_eq!(
            spec["argv"],
            json!([
                "/opt/bin/tessera",
                "kernel",
                "--connection-file",
                "{connection_file}"
            ])
        );
        assert!(dir.join("logo-svg.svg").exists());
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
