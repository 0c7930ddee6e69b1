//! The back ends: a checked Tile IR program becomes PTX (through Target IR, [`ptx`]) or a
//! SPIR-V module ([`spirv`]). Both read the same Tile ops and the same scalar vocabulary
//! ([`crate::scalar`]).

pub mod ptx;
pub mod spirv;

use ptx::TargetError;

/// Why a back end produced no code for a kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// Not supported yet (the caller falls back): the reason.
    NotLowered(String),
    /// The builder's verifier rejected the kernel (a compiler bug).
    Target(TargetError),
}

impl From<crate::kernels::Error> for Error {
    fn from(e: crate::kernels::Error) -> Error {
        match e {
            crate::kernels::Error::NotLowered(why) => Error::NotLowered(why),
        }
    }
}

impl From<TargetError> for Error {
    fn from(e: TargetError) -> Error {
        Error::Target(e)
    }
}
