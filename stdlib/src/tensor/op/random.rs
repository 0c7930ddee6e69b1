//! The session's random generator (SPEC §4, docs/decisions.md "Random numbers"): `op.rand`,
//! `op.randn` and `op.randint` without a seed take the seed of their draw from it, and
//! `op.seed(n)` resets it. It is counter-based like the values themselves: after `op.seed(s)`
//! (a session starts at `s = 0`), the `k`-th unseeded draw uses the seed `bits(s, k)`, so a
//! script draws the same values on every run, machine and backend, and two draws differ.

use super::table::{self, Call};
use std::cell::Cell;
use std::rc::Rc;
use tessera_lang::eval::args::given;
use tessera_lang::eval::{Arg, Module, Value};
use tessera_runtime::rng;

/// The generator's state: the seed `op.seed` set and the number of draws since.
#[derive(Default)]
pub struct Generator {
    seed: Cell<i64>,
    draws: Cell<u64>,
}

impl Generator {
    /// The seed of the next unseeded draw (the draw is counted by [`Generator::advance`]).
    fn next_seed(&self) -> i64 {
        rng::bits(self.seed.get(), self.draws.get()) as i64
    }

    fn advance(&self) {
        self.draws.set(self.draws.get().wrapping_add(1));
    }
}

/// Sets `op.rand`, `op.randn`, `op.randint` and `op.seed` of `m` to functions sharing one
/// generator (one per session: each session builds its own `op` module).
pub fn install(m: &Module) {
    let g = Rc::new(Generator::default());
    for name in ["rand", "randn", "randint"] {
        let Some(row) = table::row(name) else {
            continue;
        };
        let seed_at = row
            .required
            .iter()
            .chain(&row.optional)
            .position(|p| *p == "seed")
            .unwrap_or(usize::MAX);
        let g = g.clone();
        m.set(
            name,
            Value::native(row.name, row.signature, move |it, args| {
                let mut a = args.bind(row.name, &row.required, &row.optional)?;
                let drawn = given(&a, seed_at).is_none() && seed_at < a.len();
                if drawn {
                    a[seed_at] = Some(Arg {
                        value: Value::Int(g.next_seed()),
                        span: args.span,
                    });
                }
                let c = Call {
                    row,
                    a,
                    span: args.span,
                };
                let v = (row.eager)(it, &c)?;
                // a call that fails draws nothing
                if drawn {
                    g.advance();
                }
                Ok(v)
            }),
        );
    }
    m.set(
        "seed",
        Value::native("seed", "seed(n)", move |_, args| {
            let a = args.bind("seed", &["n"], &[])?;
            let n = tessera_lang::eval::args::required(&a, 0)?.int("seed")?;
            g.seed.set(n);
            g.draws.set(0);
            Ok(Value::None)
        }),
    );
}
