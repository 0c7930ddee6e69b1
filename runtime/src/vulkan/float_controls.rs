//! The float controls a module asks for (`DenormPreserve`, `SignedZeroInfNanPreserve`, per
//! float width) and those the device supports (`VkPhysicalDeviceFloatControlsProperties`): a
//! module runs everywhere, with the guarantees the device can give. Asking for an unsupported
//! one is invalid usage, so [`fit`] drops those execution modes (and their capability when no
//! mode of it is left) from the words before the shader module is made.

use std::borrow::Cow;

/// `OpCapability`, `OpExecutionMode` and the enumerants used here (SPIR-V 1.6 specification).
const OP_CAPABILITY: u32 = 17;
const OP_EXECUTION_MODE: u32 = 16;
const MODE_DENORM_PRESERVE: u32 = 4459;
const MODE_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4461;
const CAP_DENORM_PRESERVE: u32 = 4464;
const CAP_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4466;

/// What the device supports, per float width (16, 32, 64 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FloatControls {
    /// `shaderDenormPreserveFloat16/32/64`: subnormals kept on request.
    pub denorm_preserve: [bool; 3],
    /// `shaderSignedZeroInfNanPreserveFloat16/32/64`: signed zeros, infinities and NaNs kept.
    pub signed_zero_inf_nan: [bool; 3],
}

impl FloatControls {
    fn supports(&self, mode: u32, width: u32) -> bool {
        let i = match width {
            16 => 0,
            32 => 1,
            64 => 2,
            _ => return false,
        };
        match mode {
            MODE_DENORM_PRESERVE => self.denorm_preserve[i],
            MODE_SIGNED_ZERO_INF_NAN_PRESERVE => self.signed_zero_inf_nan[i],
            _ => true,
        }
    }
}

/// `words` without the float-control execution modes `fc` does not support (and without the
/// capability of a mode none of whose uses is left); the words themselves when all are
/// supported or the module is malformed (the driver then says so).
pub fn fit<'a>(words: &'a [u32], fc: &FloatControls) -> Cow<'a, [u32]> {
    // (instruction start, length) of each instruction to drop
    let mut drop: Vec<(usize, usize)> = vec![];
    let mut kept = [false; 2];
    let mut caps: Vec<(usize, usize, usize)> = vec![];
    let mut at = 5; // the header
    while at < words.len() {
        let (len, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        if len == 0 || at + len > words.len() {
            return Cow::Borrowed(words);
        }
        let inst = &words[at..at + len];
        match (op, inst) {
            (OP_CAPABILITY, [_, c]) if *c == CAP_DENORM_PRESERVE => caps.push((at, len, 0)),
            (OP_CAPABILITY, [_, c]) if *c == CAP_SIGNED_ZERO_INF_NAN_PRESERVE => {
                caps.push((at, len, 1))
            }
            (OP_EXECUTION_MODE, [_, _, mode, width])
                if *mode == MODE_DENORM_PRESERVE || *mode == MODE_SIGNED_ZERO_INF_NAN_PRESERVE =>
            {
                let which = usize::from(*mode == MODE_SIGNED_ZERO_INF_NAN_PRESERVE);
                if fc.supports(*mode, *width) {
                    kept[which] = true;
                } else {
                    drop.push((at, len));
                }
            }
            _ => {}
        }
        at += len;
    }
    drop.extend(caps.iter().filter(|c| !kept[c.2]).map(|c| (c.0, c.1)));
    if drop.is_empty() {
        return Cow::Borrowed(words);
    }
    drop.sort_unstable();
    let mut out = Vec::with_capacity(words.len());
    let mut from = 0;
    for (start, len) in drop {
        out.extend_from_slice(&words[from..start]);
        from = start + len;
    }
    out.extend_from_slice(&words[from..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header, the two capabilities, an unrelated instruction and four modes.
    fn module() -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0600, 0, 100, 0];
        w.extend([2 << 16 | OP_CAPABILITY, 1]); // Shader
        w.extend([2 << 16 | OP_CAPABILITY, CAP_DENORM_PRESERVE]);
        w.extend([2 << 16 | OP_CAPABILITY, CAP_SIGNED_ZERO_INF_NAN_PRESERVE]);
        for (mode, width) in [
            (MODE_DENORM_PRESERVE, 32),
            (MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 32),
            (MODE_DENORM_PRESERVE, 64),
            (MODE_SIGNED_ZERO_INF_NAN_PRESERVE, 64),
        ] {
            w.extend([4 << 16 | OP_EXECUTION_MODE, 7, mode, width]);
        }
        w
    }

    fn modes(w: &[u32]) -> Vec<(u32, u32)> {
        let mut out = vec![];
        let mut at = 5;
        while at < w.len() {
            let len = (w[at] >> 16) as usize;
            if w[at] & 0xffff == OP_EXECUTION_MODE {
                out.push((w[at + 2], w[at + 3]));
            }
            if w[at] & 0xffff == OP_CAPABILITY {
                out.push((0, w[at + 1]));
            }
            at += len;
        }
        out
    }

    #[test]
    fn keeps_what_the_device_supports_and_drops_the_rest() {
        let w = module();
        let all = FloatControls {
            denorm_preserve: [true; 3],
            signed_zero_inf_nan: [true; 3],
        };
        assert!(matches!(fit(&w, &all), Cow::Borrowed(_)));
        let some = FloatControls {
            denorm_preserve: [false, true, false],
            signed_zero_inf_nan: [true; 3],
        };
        let out = fit(&w, &some);
        let m = modes(&out);
        assert!(m.contains(&(MODE_DENORM_PRESERVE, 32)));
        assert!(!m.contains(&(MODE_DENORM_PRESERVE, 64)));
        assert!(m.contains(&(0, CAP_DENORM_PRESERVE)));
        assert_eq!(out.len(), w.len() - 4);
        let none = FloatControls::default();
        let out = fit(&w, &none);
        assert_eq!(modes(&out), [(0, 1)], "only Shader is left");
        assert_eq!(out.len(), w.len() - 4 * 4 - 2 * 2);
        // a malformed module is passed through for the driver to refuse
        let bad = [0x0723_0203, 0, 0, 0, 0, 9 << 16 | OP_CAPABILITY];
        assert!(matches!(fit(&bad, &none), Cow::Borrowed(_)));
    }
}
