//! Target IR: one PTX function (typed virtual registers, basic blocks, predicates), its PTX printer.
