"""NumPy + ml_dtypes reimplementation of the tensor part of Tessera's `op` module.

This is the independent test oracle: it follows /work/shared/SPEC.md section 4 and
docs/decisions.md, and shares no code with the Rust implementation.

Conventions
- A Tensor holds a numpy array in a *storage* dtype (float64, float32, float16,
  ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, int64, int32, int8,
  bool) plus one of our dtype objects. tf32 is stored as float32 whose mantissa has been
  rounded (RNE) to 10 bits.
- Every rounding to a float format is done here (round-to-nearest-even, fp8 saturating),
  not by numpy/ml_dtypes casts, so double rounding through float32 never happens: values
  are computed in float64 and rounded once to the format. The final astype to the storage
  dtype is then exact.
- Arithmetic whose result is fp32 or narrower: computed in float64 from the exact inputs,
  rounded to fp32 (this is exactly IEEE fp32 arithmetic for + - * / sqrt), then rounded
  to the result dtype ("computed in fp32 and rounded once").
"""

import builtins
import math
import os
import sys

import ml_dtypes
import numpy as np

np.seterr(all="ignore")   # IEEE results (inf, nan) are what we want; errors are raised explicitly


# --------------------------------------------------------------------------------------
# errors


class TesseraError(Exception):
    def __init__(self, code, msg):
        super().__init__(f"error[{code}]: {msg}")
        self.code = code


def _err(code, msg):
    raise TesseraError(code, msg)


# --------------------------------------------------------------------------------------
# dtypes


class DType:
    __slots__ = ("name", "kind", "storage", "mant", "emin", "maxval", "saturate", "prec", "rank")

    def __init__(self, name, kind, storage, mant=None, emin=None, maxval=None, saturate=False,
                 prec=None, rank=0):
        self.name = name
        self.kind = kind          # "float", "int", "bool", "complex"
        self.storage = storage    # numpy dtype used to hold values
        self.mant = mant          # explicit mantissa bits (float)
        self.emin = emin          # exponent of the smallest normal (float)
        self.maxval = maxval      # largest finite value (float)
        self.saturate = saturate  # fp8: saturate instead of overflowing to inf
        self.prec = prec          # significand precision used by rand
        self.rank = rank

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, DType):
            return self.name == other.name
        if isinstance(other, str):
            try:
                return _dtype(other).name == self.name
            except TesseraError:
                return False
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self.name)

    @property
    def is_float(self):
        return self.kind == "float"


def _maxf(mant, emax):
    return (2.0 - 2.0 ** -mant) * 2.0 ** emax


fp64 = DType("fp64", "float", np.dtype(np.float64), 52, -1022, float(np.finfo(np.float64).max), prec=53)
fp32 = DType("fp32", "float", np.dtype(np.float32), 23, -126, _maxf(23, 127), prec=24)
tf32 = DType("tf32", "float", np.dtype(np.float32), 10, -126, _maxf(10, 127), prec=11)
fp16 = DType("fp16", "float", np.dtype(np.float16), 10, -14, 65504.0, prec=11)
bf16 = DType("bf16", "float", np.dtype(ml_dtypes.bfloat16), 7, -126, _maxf(7, 127), prec=8)
fp8_e4m3 = DType("fp8_e4m3", "float", np.dtype(ml_dtypes.float8_e4m3fn), 3, -6, 448.0,
                 saturate=True, prec=4)
fp8_e5m2 = DType("fp8_e5m2", "float", np.dtype(ml_dtypes.float8_e5m2), 2, -14, 57344.0,
                 saturate=True, prec=3)
int64 = DType("int64", "int", np.dtype(np.int64), rank=3)
int32 = DType("int32", "int", np.dtype(np.int32), rank=2)
int8 = DType("int8", "int", np.dtype(np.int8), rank=1)
bool_ = DType("bool", "bool", np.dtype(np.bool_), rank=0)
c64 = DType("c64", "complex", np.dtype(np.complex64))
c128 = DType("c128", "complex", np.dtype(np.complex128))

_CANON = {d.name: d for d in
          [fp64, fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int64, int32, int8, bool_, c64, c128]}
_ALIASES = {
    "float64": "fp64", "f64": "fp64", "double": "fp64",
    "float32": "fp32", "f32": "fp32", "float": "fp32",
    "float16": "fp16", "f16": "fp16", "half": "fp16",
    "bfloat16": "bf16",
    "int": "int64", "i64": "int64", "i32": "int32", "i8": "int8",
    "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2",
    "complex64": "c64", "complex128": "c128",
}


def _dtype(d):
    if isinstance(d, DType):
        return d
    if isinstance(d, str):
        name = _ALIASES.get(d, d)
        if name in _CANON:
            return _CANON[name]
        _err("E0201", f"unknown dtype '{d}'")
    _err("E0101", f"expected a dtype, got {type(d).__name__}")


# Float lattice: fp8_e4m3, fp8_e5m2 < fp16, bf16 < tf32 < fp32 < fp64.
_FLOAT_LEVEL = {"fp8_e4m3": 0, "fp8_e5m2": 0, "fp16": 1, "bf16": 1, "tf32": 2, "fp32": 3, "fp64": 4}


def _promote(a, b):
    """Promotion of two tensor dtypes (decisions.md)."""
    if a == b:
        return a
    if a.kind == "complex" or b.kind == "complex":
        # NumPy's: c128 when either side is c128 or fp64, else c64
        return c128 if (a in (c128, fp64) or b in (c128, fp64)) else c64
    if a.is_float and b.is_float:
        la, lb = _FLOAT_LEVEL[a.name], _FLOAT_LEVEL[b.name]
        if la != lb:
            return a if la > lb else b
        if la == 0:
            return fp16          # e4m3 with e5m2
        if la == 1:
            return fp32          # fp16 with bf16
        return a
    if a.is_float:
        return a
    if b.is_float:
        return b
    return a if a.rank >= b.rank else b


# --------------------------------------------------------------------------------------
# rounding


def _round_float64(x, d):
    """Round a float64 array to the values of float format `d` (RNE), as float64."""
    x = np.asarray(x, dtype=np.float64)
    if d is fp64:
        return x.copy()
    if d is tf32:
        return _tf32_round(_round_float64(x, fp32))
    out = x.copy()
    finite = np.isfinite(x) & (x != 0)
    if np.any(finite):
        v = x[finite]
        _, e = np.frexp(v)          # v = m * 2**e with 0.5 <= |m| < 1
        e = e - 1                   # |v| in [2**e, 2**(e+1))
        e = np.maximum(e, d.emin)
        q = np.ldexp(1.0, e - d.mant)
        r = np.round(v / q) * q     # np.round is round-half-to-even; scaling is exact
        out[finite] = r
    # zeros keep their sign; round results that became 0 keep the sign of x
    out = np.where((out == 0) & np.isfinite(x), np.copysign(0.0, x), out)
    big = np.isfinite(out) & (np.abs(out) > d.maxval)
    if d.saturate:
        out = np.where(np.isinf(x), np.sign(x) * d.maxval, out)  # fp8: inf saturates too
        out = np.where(np.abs(out) > d.maxval, np.sign(out) * d.maxval, out)
    else:
        out = np.where(big, np.sign(out) * np.inf, out)
    return out


def _tf32_round(x64):
    """fp32 values (as float64) -> mantissa rounded RNE to 10 bits, via the uint32 view."""
    f = np.asarray(x64, dtype=np.float64).astype(np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    exp_all_ones = (u & 0x7F800000) == 0x7F800000
    lsb = (u >> 13) & 1
    r = (u + 0xFFF + lsb) & ~np.uint64(0x1FFF)
    r = np.where(exp_all_ones, u, r)   # inf / nan unchanged
    r = (r & 0xFFFFFFFF).astype(np.uint32)
    return r.view(np.float32).astype(np.float64)


def _to_storage(x64, d):
    """float64 array of values already representable in d -> storage array."""
    return np.asarray(x64, dtype=np.float64).astype(d.storage)


def _cast_array(arr, src, dst):
    """Cast a storage array of dtype `src` to dtype `dst` (SPEC §4 and decisions)."""
    if dst.kind == "complex":
        if src.kind == "complex":
            return arr.astype(dst.storage)
        x = arr.astype(np.float64)
        if dst is c64:
            x = _round_float64(x, fp32)
        return x.astype(dst.storage)
    if src.kind == "complex":
        if dst.kind == "bool":
            return arr != 0
        # decisions.md: the real part (NumPy's astype, without its ComplexWarning)
        return _cast_array(np.real(arr).astype(np.float64), fp64, dst)
    if dst.is_float:
        if src.is_float:
            x = arr.astype(np.float64)
        else:
            x = arr.astype(np.float64)
        return _to_storage(_round_float64(x, dst), dst)
    if dst.kind == "bool":
        return arr != 0
    # to int
    if src.is_float:
        x = arr.astype(np.float64)
        if np.any(np.isnan(x)):
            _err("E0500", f"cannot cast NaN to {dst.name}")
        t = np.trunc(x)
        info = np.iinfo(dst.storage)
        if np.any((t < info.min) | (t > info.max)):
            _err("E0500", f"value out of range for {dst.name}")
        return t.astype(dst.storage)
    with np.errstate(all="ignore"):
        return arr.astype(dst.storage)   # ints wrap, bool -> 0/1


# --------------------------------------------------------------------------------------
# Tensor


def _c(a):
    """A C-contiguous copy that keeps 0-d arrays 0-d (np.ascontiguousarray would not)."""
    return np.array(a, copy=True, order="C")


_STRICT = os.environ.get("TESSERA_ORACLE_STRICT") == "1"


def _fmt_elem(v, d, sci=False):
    if d.kind == "complex":
        z = builtins.complex(v)
        im = ("%+.4e" if sci and math.isfinite(z.imag) else "%+.4f") % z.imag
        return _fmt_elem(z.real, fp64, sci) + im + "j"
    if d.kind == "bool":
        return "True" if bool(v) else "False"
    if d.kind == "int":
        return str(int(v))
    f = float(v)
    if sci and math.isfinite(f):
        return "%.4e" % f
    s = "%.4f" % f
    if _STRICT and math.isfinite(f) and f != 0.0:
        # a value whose 4-decimal print flips under a few ulps of fp32 noise is a fragile test
        eps = 5e-7 * builtins.max(1.0, builtins.abs(f))
        if "%.4f" % (f - eps) != s or "%.4f" % (f + eps) != s:
            sys.stderr.write(f"ORACLE-UNSTABLE: {f!r} prints as {s} ({d.name})\n")
    return s


def _shown(a):
    """The elements a tensor prints (first and last 3 of dimensions longer than 6)."""
    if a.ndim == 0:
        return [a[()]]
    n = a.shape[0]
    idx = list(range(3)) + list(range(n - 3, n)) if n > 6 else list(range(n))
    out = []
    for i in idx:
        out += _shown(a[i])
    return out


def _scientific(a, d):
    """SPEC §3: scientific when a nonzero shown value prints as 0.0000, or the nonzero
    magnitudes span more than 10^8."""
    if d.kind not in ("float", "complex"):
        return False
    if d.kind == "complex":
        mags = [builtins.abs(p) for v in _shown(a)
                for p in (builtins.complex(v).real, builtins.complex(v).imag)]
    else:
        mags = [builtins.abs(float(v)) for v in _shown(a)]
    mags = [m for m in mags if math.isfinite(m) and m != 0.0]
    if not mags:
        return False
    lo, hi = builtins.min(mags), builtins.max(mags)
    return "%.4f" % lo == "0.0000" or hi / lo > 1e8


def _fmt_array(a, d, sci=None):
    if sci is None:
        sci = _scientific(a, d)
    if a.ndim == 0:
        return _fmt_elem(a[()], d, sci)
    n = a.shape[0]
    if n == 0:
        return "[]"
    if n > 6:
        parts = [_fmt_array(a[i], d, sci) for i in range(3)] + ["..."] + \
                [_fmt_array(a[i], d, sci) for i in range(n - 3, n)]
    else:
        parts = [_fmt_array(a[i], d, sci) for i in range(n)]
    return "[" + ", ".join(parts) + "]"


def _py_scalar(v, d):
    if d.kind == "complex":
        _err("E0201", f"a {d.name} tensor has no Python number: use op.real(x) and op.imag(x)")
    if d.kind == "bool":
        return bool(v)
    if d.kind == "int":
        return int(v)
    return float(v)


class Tensor:
    __array_priority__ = 1000
    __hash__ = None

    def __init__(self, arr, dtype):
        dtype = _dtype(dtype)
        arr = np.asarray(arr)
        if arr.dtype != dtype.storage:
            raise AssertionError(f"internal: storage {arr.dtype} for {dtype}")
        self._a = arr
        self._d = dtype

    # ---- properties
    @property
    def shape(self):
        return tuple(int(s) for s in self._a.shape)

    @property
    def dtype(self):
        return self._d

    @property
    def ndim(self):
        return self._a.ndim

    @property
    def T(self):
        return Tensor(_c(self._a.T), self._d)

    @property
    def is_abstract(self):
        return False

    @property
    def layout(self):
        return None

    def _f64(self):
        return self._a.astype(np.float64)

    # ---- methods
    def to(self, dtype):
        return cast(self, dtype)

    def reshape(self, *shape):
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def tolist(self):
        if self._a.ndim == 0:
            return _py_scalar(self._a[()], self._d)

        def rec(a):
            if a.ndim == 0:
                return _py_scalar(a[()], self._d)
            return [rec(a[i]) for i in range(a.shape[0])]
        return rec(self._a)

    def item(self):
        if self._a.size != 1:
            _err("E0200", f"item() needs a tensor with one element, got shape {list(self.shape)}")
        return _py_scalar(self._a.reshape(())[()], self._d)

    def __repr__(self):
        return f"tensor({_fmt_array(self._a, self._d)}, dtype={self._d.name})"

    def __format__(self, spec):
        # a one-element tensor formats as its number (f"{t:.2f}")
        if spec and self._a.size == 1:
            return format(_py_scalar(self._a.reshape(())[()], self._d), spec)
        if spec:
            raise TypeError(f"invalid format specifier '{spec}' for a value of type tensor")
        return str(self)

    __str__ = __repr__

    def __bool__(self):
        if self._a.size != 1:
            _err("E0500", "the truth value of a tensor with more than one element is ambiguous")
        return bool(self._a.reshape(())[()] != 0) if self._d.kind != "bool" else bool(self._a.reshape(())[()])

    def __len__(self):
        if self._a.ndim == 0:
            _err("E0101", "len() of a 0-d tensor")
        return self._a.shape[0]

    # ---- indexing
    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        adv = [i for i in idx if isinstance(i, (list, Tensor))]
        if adv:
            # one list / int tensor / bool mask: NumPy's advanced indexing
            if len(adv) > 1:
                _err("E0101", "only one list, integer tensor or mask per index is supported")
            conv = tuple(
                (i._a if isinstance(i, Tensor) else np.asarray(i, dtype=np.int64 if not i else None))
                if isinstance(i, (list, Tensor)) else i
                for i in idx)
            return Tensor(_c(self._a[conv]), self._d)
        for i in idx:
            if isinstance(i, bool) or not (isinstance(i, (int, slice)) or i is None or i is Ellipsis):
                _err("E0101", "tensor indices must be ints, slices, None or ...")
        try:
            return Tensor(_c(self._a[idx]), self._d)
        except IndexError as e:
            _err("E0500", str(e))

    def __setitem__(self, idx, value):
        # NumPy assignment on the storage array; the value converted to this dtype first
        # (numbers and lists straight from float64/int, tensors by the cast rules).
        if not isinstance(idx, tuple):
            idx = (idx,)
        if builtins.sum(isinstance(i, (list, Tensor)) for i in idx) > 1:
            _err("E0101", "only one list, integer tensor or mask per index is supported")
        conv = tuple(
            (i._a if isinstance(i, Tensor) else np.asarray(i, dtype=np.int64 if not i else None))
            if isinstance(i, (list, Tensor)) else i
            for i in idx)
        if isinstance(value, Tensor):
            v = _cast_array(value._a, value._d, self._d)
        elif isinstance(value, (int, float, bool, list, tuple)):
            v = tensor(value, self._d)._a
        else:
            _err("E0101", f"cannot assign a {type(value).__name__} to elements of a tensor")
        try:
            self._a[conv] = v
        except ValueError as e:
            _err("E0200", str(e))
        except IndexError as e:
            _err("E0500", str(e))

    # ---- operators
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _binary("div", self, o)
    def __rtruediv__(self, o): return _binary("div", o, self)
    def __floordiv__(self, o): return _binary("floordiv", self, o)
    def __rfloordiv__(self, o): return _binary("floordiv", o, self)
    def __mod__(self, o): return _binary("mod", self, o)
    def __rmod__(self, o): return _binary("mod", o, self)
    def __pow__(self, o): return _binary("pow", self, o)
    def __rpow__(self, o): return _binary("pow", o, self)
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)
    def __neg__(self): return neg(self)
    def __pos__(self): return self
    def __eq__(self, o): return _binary("eq", self, o)
    def __ne__(self, o): return _binary("ne", self, o)
    def __lt__(self, o): return _binary("lt", self, o)
    def __le__(self, o): return _binary("le", self, o)
    def __gt__(self, o): return _binary("gt", self, o)
    def __ge__(self, o): return _binary("ge", self, o)
    def __and__(self, o): return _logical("&", self, o)
    def __rand__(self, o): return _logical("&", o, self)
    def __or__(self, o): return _logical("|", self, o)
    def __ror__(self, o): return _logical("|", o, self)

    def __invert__(self):
        if self._d is not bool_:
            _err("E0201", f"`~` on tensors is elementwise logical not and needs a bool tensor, got {self._d.name}")
        return Tensor(_c(np.logical_not(self._a)), bool_)


def _truth(x):
    return x._a if isinstance(x, Tensor) else tensor(x)._a


def logical_and(a, b): return Tensor(np.logical_and(_truth(a), _truth(b)), bool_)
def logical_or(a, b): return Tensor(np.logical_or(_truth(a), _truth(b)), bool_)
def logical_not(a): return Tensor(np.logical_not(_truth(a)), bool_)


def _logical(sym, a, b):
    """`&` / `|` of tensors: elementwise logical and/or of bool operands (SPEC §2)."""
    def dt(x):
        if isinstance(x, Tensor):
            return x._d
        return bool_ if isinstance(x, bool) else None
    if dt(a) is not bool_ or dt(b) is not bool_:
        _err("E0201", f"`{sym}` on tensors is elementwise logical and needs bool operands")
    A = a._a if isinstance(a, Tensor) else np.bool_(a)
    B = b._a if isinstance(b, Tensor) else np.bool_(b)
    r = np.logical_and(A, B) if sym == "&" else np.logical_or(A, B)
    return Tensor(_c(np.asarray(r)), bool_)


def _check_tensor(x, what="argument"):
    if not isinstance(x, Tensor):
        _err("E0101", f"{what} must be a tensor, got {type(x).__name__}")
    return x


# --------------------------------------------------------------------------------------
# operands and promotion with Python scalars


def _operands(a, b):
    """Return (A, B, result_dtype) as Tensors, applying the Python-scalar rules."""
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        return a, b, _promote(a.dtype, b.dtype)
    if not ta and not tb:
        _err("E0101", "expected a tensor operand")
    t, s = (a, b) if ta else (b, a)
    if isinstance(s, bool):
        s = int(s)
    if isinstance(s, int):
        if t.dtype.kind == "bool":
            d = int64
        else:
            d = t.dtype
    elif isinstance(s, float):
        d = t.dtype if t.dtype.is_float or t.dtype.kind == "complex" else fp32
    else:
        _err("E0101", f"unsupported operand type {type(s).__name__} for a tensor operation")
    st = _scalar_tensor(s, d)
    return (t, st, d) if ta else (st, t, d)


def _scalar_tensor(s, d):
    if d.kind == "complex":
        return Tensor(np.array(s, dtype=d.storage), d)
    if d.is_float:
        # the scalar enters the computation at the compute precision
        cd = fp64 if d is fp64 else fp32
        return Tensor(_to_storage(_round_float64(np.float64(s), cd), cd), cd)
    if d.kind == "int":
        info = np.iinfo(d.storage)
        v = int(s)
        v = (v - info.min) % (1 << info.bits) + info.min   # wrap
        return Tensor(np.array(v, dtype=d.storage), d)
    return Tensor(np.array(bool(s)), bool_)


def _warn_fragile(x32, d):
    """STRICT mode: flag fp32 results within a few fp32 ulps of a rounding tie of d."""
    if not _STRICT or d in (fp32, fp64):
        return
    x32 = np.asarray(x32, dtype=np.float64)
    base = _round_float64(x32, d)
    for k in (-4.0, 4.0):
        alt = _round_float64(x32 * (1.0 + k * 2.0 ** -24), d)
        bad = (alt != base) & np.isfinite(base)
        if np.any(bad):
            sys.stderr.write(f"ORACLE-UNSTABLE: rounding to {d.name} of {x32[bad].tolist()[:3]} "
                             f"depends on fp32 noise\n")
            return


def _finish_float(x64, d):
    """Exact float64 result of an op -> rounded to the compute type, then to d."""
    if d is fp64:
        return Tensor(_to_storage(x64, fp64), fp64)
    x = _round_float64(x64, fp32)
    _warn_fragile(x, d)
    return Tensor(_to_storage(_round_float64(x, d), d), d)


def _bshape(a, b, opname):
    try:
        return np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        _err("E0200", f"{opname}: shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast")


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}
_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "pow": "**",
        "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
        "maximum": "maximum", "minimum": "minimum"}


def _binary(opname, a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        _err("E0101", f"{opname} needs a tensor")
    if opname in _CMP and not isinstance(b, (Tensor, int, float, bool)):
        return NotImplemented
    A, B, d = _operands(a, b)
    _bshape(A, B, _SYM[opname])
    if d.kind == "complex":
        return _complex_binary(opname, A, B, d)
    if opname in _CMP:
        if d.is_float or A.dtype.is_float or B.dtype.is_float:
            r = _CMP[opname](A._f64(), B._f64())
        else:
            r = _CMP[opname](A._a.astype(np.int64), B._a.astype(np.int64))
        return Tensor(np.asarray(r), bool_)
    if d.kind == "bool":
        d = int64   # arithmetic on two bool tensors promotes to int64
    if opname == "div" and not d.is_float:
        d = fp32
    if d.is_float:
        x, y = A._f64(), B._f64()
        with np.errstate(all="ignore"):
            if opname == "add":
                r = x + y
            elif opname == "sub":
                r = x - y
            elif opname == "mul":
                r = x * y
            elif opname == "div":
                r = x / y
            elif opname == "floordiv":
                r = np.floor_divide(x, y)
            elif opname == "mod":
                r = np.mod(x, y)
            elif opname == "pow":
                r = np.power(x, y)
            elif opname == "maximum":
                r = np.maximum(x, y)
            elif opname == "minimum":
                r = np.minimum(x, y)
        return _finish_float(r, d)
    # integer arithmetic wraps at the dtype's width
    x = A._a.astype(np.int64)
    y = B._a.astype(np.int64)
    with np.errstate(all="ignore"):
        if opname in ("floordiv", "mod"):
            if np.any(np.broadcast_to(y, np.broadcast_shapes(x.shape, y.shape)) == 0):
                _err("E0500", f"integer {'division' if opname == 'floordiv' else 'modulo'} by zero")
            r = np.floor_divide(x, y) if opname == "floordiv" else np.mod(x, y)
        elif opname == "add":
            r = x + y
        elif opname == "sub":
            r = x - y
        elif opname == "mul":
            r = x * y
        elif opname == "pow":
            if np.any(y < 0):
                _err("E0500", "integers to negative integer powers are not allowed")
            r = np.power(x, y)
        elif opname == "maximum":
            r = np.maximum(x, y)
        elif opname == "minimum":
            r = np.minimum(x, y)
        r = np.asarray(r).astype(d.storage)
    return Tensor(r, d)


# --------------------------------------------------------------------------------------
# creation


def _shape_arg(shape):
    if isinstance(shape, bool):
        _err("E0101", "shape must be an int or a tuple of ints")
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in shape):
        _err("E0101", "shape must be an int or a tuple of ints")
    if any(s < 0 for s in shape):
        _err("E0101", "negative dimension in shape")
    return tuple(shape)


MAX_BYTES = 1 << 34   # oracle's own limit (16 GiB): far above anything a test materialises


def _check_bytes(shape, d):
    n = 1
    for s in shape:
        n *= s
    if n * d.storage.itemsize > MAX_BYTES:
        _err("E0700", f"tensor of shape {list(shape)} ({n * d.storage.itemsize} bytes) is too large to materialise")


def _flatten(x, out, depth, shape):
    if isinstance(x, (list, tuple)):
        if len(shape) <= depth:
            shape.append(len(x))
        elif shape[depth] != len(x):
            _err("E0200", "ragged nested list")
        for e in x:
            _flatten(e, out, depth + 1, shape)
    elif isinstance(x, Tensor):
        _err("E0101", "op.tensor of a list of tensors is not supported by the oracle")
    else:
        if len(shape) > depth and depth < len(shape):
            _err("E0200", "ragged nested list")
        if not isinstance(x, (int, float, bool)):
            _err("E0101", f"tensor elements must be numbers, got {type(x).__name__}")
        out.append(x)


def tensor(data, dtype=None):
    if isinstance(data, Tensor):
        return data if dtype is None else cast(data, dtype)
    vals, shape = [], []
    _flatten(data, vals, 0, shape)
    if isinstance(data, (list, tuple)) and not vals and not shape:
        shape = [0]
    if dtype is None:
        if any(isinstance(v, float) for v in vals):
            d = fp32
        elif vals and all(isinstance(v, bool) for v in vals):
            d = bool_
        else:
            d = int64 if vals or not isinstance(data, (list, tuple)) else fp32
    else:
        d = _dtype(dtype)
    shape = tuple(shape)
    if d.kind == "complex":
        src = np.array([float(v) for v in vals], dtype=np.float64).reshape(shape)
        return Tensor(_cast_array(src, fp64, d), d)
    if any(isinstance(v, float) for v in vals) or d.is_float:
        src = np.array([float(v) for v in vals], dtype=np.float64).reshape(shape)
        return Tensor(_cast_array(src, fp64, d), d)
    src = np.array([int(v) for v in vals], dtype=object).reshape(shape)
    if d.kind == "bool":
        return Tensor(np.asarray(src != 0, dtype=np.bool_), d)
    info = np.iinfo(d.storage)
    wrapped = [(int(v) - info.min) % (1 << info.bits) + info.min for v in vals]
    return Tensor(np.array(wrapped, dtype=d.storage).reshape(shape), d)


def full(shape, value, dtype=None):
    shape = _shape_arg(shape)
    d = _dtype(dtype) if dtype is not None else fp32
    _check_bytes(shape, d)
    if not isinstance(value, (int, float)):
        _err("E0101", "fill value must be a number")
    one = tensor(value if d.kind != "bool" else bool(value), dtype=d)
    return Tensor(np.full(shape, one._a[()], dtype=d.storage), d)


def zeros(shape, dtype=None):
    return full(shape, 0, dtype=dtype)


def ones(shape, dtype=None):
    return full(shape, 1, dtype=dtype)


def arange(start, stop=None, step=1, dtype=None):
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if not isinstance(v, (int, float)):
            _err("E0101", "arange needs numbers")
    if step == 0:
        _err("E0200", "arange: the step must not be zero")
    ints = builtins.all(isinstance(v, int) for v in (start, stop, step))
    if ints:
        d = _dtype(dtype) if dtype is not None else int64
        a = np.arange(start, stop, step, dtype=np.int64)
        _check_bytes(a.shape, d)
        return Tensor(_cast_array(a, int64, d), d)
    d = _dtype(dtype) if dtype is not None else fp32
    n = builtins.max(0, math.ceil((stop - start) / step))
    _check_bytes((n,), d)
    a = start + np.arange(n, dtype=np.float64) * step
    return Tensor(_to_storage(a, d), d)


def linspace(start, stop, num=50, dtype=None):
    if isinstance(num, bool) or not isinstance(num, int):
        _err("E0101", "linspace: num must be an int")
    if num < 0:
        _err("E0200", f"linspace: num must not be negative, got {num}")
    d = _dtype(dtype) if dtype is not None else fp32
    _check_bytes((num,), d)
    a = np.linspace(float(start), float(stop), num, dtype=np.float64)
    return Tensor(_to_storage(a, d), d)


def eye(n, dtype=None):
    if isinstance(n, bool) or not isinstance(n, int):
        _err("E0101", "eye(n) needs an int")
    d = _dtype(dtype) if dtype is not None else fp32
    _check_bytes((n, n), d)
    return Tensor(_cast_array(np.eye(n, dtype=np.int64), int64, d), d)


# ---- random numbers (decisions.md: counter-based splitmix64)

_M64 = (1 << 64) - 1


def _splitmix64_int(z):
    z = (z + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _bits_int(seed, i):
    """Reference scalar version with Python ints (used to self-check the vector one)."""
    return _splitmix64_int(_splitmix64_int(seed & _M64) ^ i)


def _splitmix64_vec(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _bits_vec(seed, idx):
    s = np.uint64(_splitmix64_int(seed & _M64))
    with np.errstate(over="ignore"):
        return _splitmix64_vec(np.asarray(idx, dtype=np.uint64) ^ s)


def _rand_args(shape, dtype, seed, fname):
    shape = _shape_arg(shape)
    d = _dtype(dtype)
    if not d.is_float:
        _err("E0201", f"{fname} needs a float dtype, got {d.name}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        _err("E0101", "seed must be an int")
    _check_bytes(shape, d)
    n = 1
    for s in shape:
        n *= s
    return shape, d, n


# The session generator: after seed(s) (a session starts at s = 0) the k-th unseeded draw uses
# the seed bits(s, k); a draw that fails counts for nothing.
_SESSION = {"seed": 0, "draws": 0}


def seed(n):
    if isinstance(n, bool) or not isinstance(n, int):
        _err("E0101", "seed must be an int")
    _SESSION["seed"] = n
    _SESSION["draws"] = 0


def _session_draw(f):
    """`f(seed)` with the next session seed, counted only when it succeeds."""
    r = f(_bits_int(_SESSION["seed"], _SESSION["draws"]))
    _SESSION["draws"] += 1
    return r


def rand(shape, dtype="fp32", seed=None):
    if seed is None:
        return _session_draw(lambda s: rand(shape, dtype, s))
    shape, d, n = _rand_args(shape, dtype, seed, "rand")
    p = d.prec
    b = _bits_vec(seed, np.arange(n, dtype=np.uint64))
    k = (b >> np.uint64(64 - p)).astype(np.float64)          # < 2**53: exact
    x = np.ldexp(k, -p)
    return Tensor(_to_storage(_round_float64(x, d), d).reshape(shape), d)


def randn(shape, dtype="fp32", seed=None):
    if seed is None:
        return _session_draw(lambda s: randn(shape, dtype, s))
    shape, d, n = _rand_args(shape, dtype, seed, "randn")
    i = np.arange(n, dtype=np.uint64)
    b1 = _bits_vec(seed, i * np.uint64(2))
    b2 = _bits_vec(seed, i * np.uint64(2) + np.uint64(1))
    u1 = np.ldexp(((b1 >> np.uint64(11)) + np.uint64(1)).astype(np.float64), -53)
    u2 = np.ldexp((b2 >> np.uint64(11)).astype(np.float64), -53)
    # libm (math module) per element, like Rust's f64::ln / f64::cos
    z = np.array([math.sqrt(-2.0 * math.log(a)) * math.cos(2.0 * math.pi * c)
                  for a, c in zip(u1.tolist(), u2.tolist())], dtype=np.float64)
    return Tensor(_to_storage(_round_float64(z, d), d).reshape(shape), d)


def randint(low, high, shape, seed=None):
    """int64 in [low, high): low + ((bits(seed, i) * (high - low)) >> 64)."""
    if seed is None:
        return _session_draw(lambda s: randint(low, high, shape, s))
    for v in (low, high, seed):
        if isinstance(v, bool) or not isinstance(v, int):
            _err("E0101", "randint: low, high and seed must be ints")
    shape = _shape_arg(shape)
    if high <= low:
        _err("E0101", f"randint: high must be greater than low, got low={low}, high={high}")
    d = _dtype("int64")
    _check_bytes(shape, d)
    n = 1
    for k in shape:
        n *= k
    b = _bits_vec(seed, np.arange(n, dtype=np.uint64))
    vals = [low + ((int(x) * (high - low)) >> 64) for x in b.tolist()]
    return Tensor(np.array(vals, dtype=np.int64).reshape(shape), d)


# --------------------------------------------------------------------------------------
# elementwise


def cast(x, dtype):
    _check_tensor(x)
    d = _dtype(dtype)
    return Tensor(_cast_array(x._a, x._d, d), d)


def _unary_float(x, f, keep_int=False):
    _check_tensor(x)
    d = x.dtype
    if d.kind == "complex":
        if f not in (np.exp, np.log, np.sqrt, np.sin, np.cos):
            _err("E0201", f"not defined for complex tensors ({d.name})")
        with np.errstate(all="ignore"):
            return Tensor(_c(np.asarray(f(x._a), dtype=d.storage)), d)
    if not d.is_float:
        if keep_int:
            return None
        d = fp32
    with np.errstate(all="ignore"):
        r = f(x._f64())
    return _finish_float(r, d)


def neg(x):
    _check_tensor(x)
    if x.dtype.kind == "complex":
        return Tensor(_c(-x._a), x.dtype)
    if not x.dtype.is_float:
        d = int64 if x.dtype.kind == "bool" else x.dtype
        with np.errstate(all="ignore"):
            return Tensor((-x._a.astype(np.int64)).astype(d.storage), d)
    return Tensor(_to_storage(-x._f64(), x.dtype), x.dtype)


def abs(x):   # noqa: A001 (op.abs)
    _check_tensor(x)
    if x.dtype.kind == "complex":
        r = fp32 if x.dtype is c64 else fp64
        return Tensor(_c(np.abs(x._a).astype(r.storage)), r)
    if not x.dtype.is_float:
        if x.dtype.kind == "bool":
            return x
        with np.errstate(all="ignore"):
            return Tensor(np.abs(x._a.astype(np.int64)).astype(x.dtype.storage), x.dtype)
    return Tensor(_to_storage(np.abs(x._f64()), x.dtype), x.dtype)


def relu(x):
    _check_tensor(x)
    if not x.dtype.is_float:
        return Tensor(np.maximum(x._a, 0).astype(x.dtype.storage), x.dtype)
    v = x._f64()
    r = np.where(np.isnan(v), v, np.maximum(v, 0.0))
    r = np.where(r == 0, 0.0, r)
    return Tensor(_to_storage(r, x.dtype), x.dtype)


def exp(x): return _unary_float(x, np.exp)
def log(x): return _unary_float(x, np.log)
def sqrt(x): return _unary_float(x, np.sqrt)
def tanh(x): return _unary_float(x, np.tanh)


def rsqrt(x):
    return _unary_float(x, lambda v: 1.0 / np.sqrt(v))


def sigmoid(x):
    return _unary_float(x, lambda v: 1.0 / (1.0 + np.exp(-v)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    return _unary_float(x, lambda v: 0.5 * v * (1.0 + _erf(v / math.sqrt(2.0))) if v.size else v)


def silu(x):
    return _unary_float(x, lambda v: v / (1.0 + np.exp(-v)))


def erf(x):
    return _unary_float(x, lambda v: _erf(v) if v.size else v)


def sin(x): return _unary_float(x, np.sin)
def cos(x): return _unary_float(x, np.cos)


def _rounding(x, f):
    """floor/ceil/round/sign: float dtypes kept, ints as int64 values (bool gives int64)."""
    _check_tensor(x)
    if not x.dtype.is_float:
        d = int64 if x.dtype.kind == "bool" else x.dtype
        return Tensor(f(x._a.astype(np.int64)).astype(d.storage), d)
    with np.errstate(all="ignore"):
        r = f(x._f64())
    return Tensor(_to_storage(r, x.dtype), x.dtype)


def floor(x): return _rounding(x, np.floor)
def ceil(x): return _rounding(x, np.ceil)
def round(x): return _rounding(x, np.round)   # noqa: A001 (ties to even, as NumPy)
def sign(x): return _rounding(x, lambda v: np.sign(v) + 0)   # + 0: sign(-0.0) is +0


def isnan(x):
    _check_tensor(x)
    if x.dtype.kind == "complex":
        return Tensor(_c(np.isnan(x._a)), bool_)
    return Tensor(_c(np.isnan(x._f64()) if x.dtype.is_float else np.zeros(x._a.shape, bool)), bool_)


def isfinite(x):
    _check_tensor(x)
    if x.dtype.kind == "complex":
        return Tensor(_c(np.isfinite(x._a)), bool_)
    return Tensor(_c(np.isfinite(x._f64()) if x.dtype.is_float else np.ones(x._a.shape, bool)), bool_)


def maximum(a, b): return _binary("maximum", a, b)
def minimum(a, b): return _binary("minimum", a, b)


def where(cond, a, b):
    if not isinstance(cond, Tensor):
        _err("E0101", "where: cond must be a tensor")
    c = cond._a != 0 if cond.dtype.kind != "bool" else cond._a
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        _err("E0101", "where: a or b must be a tensor")
    A, B, d = _operands(a, b)
    try:
        np.broadcast_shapes(c.shape, A.shape, B.shape)
    except ValueError:
        _err("E0200", f"where: shapes {list(c.shape)}, {list(A.shape)} and {list(B.shape)} cannot be broadcast")
    if d.kind == "complex":
        r = np.where(c, A._a.astype(d.storage), B._a.astype(d.storage))
        return Tensor(_c(r), d)
    if d.is_float:
        r = np.where(c, A._f64(), B._f64())
        return Tensor(_to_storage(_round_float64(r, d), d), d)
    r = np.where(c, A._a.astype(np.int64), B._a.astype(np.int64))
    return Tensor(r.astype(d.storage), d)


# --------------------------------------------------------------------------------------
# matmul


def matmul(A, B, accum_dtype=None, tile_shape=None):
    _check_tensor(A, "matmul operand")
    _check_tensor(B, "matmul operand")
    if A.ndim == 0 or B.ndim == 0:
        _err("E0200", "matmul: operands must have at least one dimension")
    ka = A.shape[-1]
    kb = B.shape[-2] if B.ndim >= 2 else B.shape[0]
    if ka != kb:
        _err("E0200", f"matmul: shapes {list(A.shape)} and {list(B.shape)} do not match ({ka} != {kb})")
    if A.ndim > 2 and B.ndim > 2 or A.ndim > 2 or B.ndim > 2:
        try:
            np.broadcast_shapes(A.shape[:-2] if A.ndim >= 2 else (), B.shape[:-2] if B.ndim >= 2 else ())
        except ValueError:
            _err("E0200", f"matmul: batch shapes of {list(A.shape)} and {list(B.shape)} cannot be broadcast")
    d = _promote(A.dtype, B.dtype)
    out = _dtype(accum_dtype) if accum_dtype is not None else d
    if not d.is_float and not out.is_float:
        r = np.matmul(A._a.astype(np.int64), B._a.astype(np.int64))
        with np.errstate(all="ignore"):
            return Tensor(np.asarray(r).astype(out.storage), out)
    x, y = A._f64(), B._f64()
    if d is tf32 or out is tf32:
        x, y = _round_float64(x, tf32), _round_float64(y, tf32)
    r = np.matmul(x, y)
    if out.is_float:
        return _finish_float(np.asarray(r), out)
    return Tensor(_cast_array(np.asarray(r), fp64, out), out)


# --------------------------------------------------------------------------------------
# reductions


def _axes(x, axis):
    if axis is None:
        return tuple(range(x.ndim))
    if isinstance(axis, int) and not isinstance(axis, bool):
        axis = (axis,)
    res = []
    for a in axis:
        if not -x.ndim <= a < builtins.max(x.ndim, 1):
            _err("E0500", f"axis {a} is out of range for a tensor of {x.ndim} dimensions")
        res.append(a % x.ndim if x.ndim else 0)
    return tuple(res)


def sum(x, axis=None, keepdim=False):  # noqa: A001
    _check_tensor(x)
    ax = _axes(x, axis)
    if x.dtype.kind == "complex":
        # accumulated in complex128 parts, rounded once (decisions.md)
        r = np.sum(x._a.astype(np.complex128), axis=ax, keepdims=keepdim)
        return Tensor(_c(np.asarray(r).astype(x.dtype.storage)), x.dtype)
    if not x.dtype.is_float:
        r = np.sum(x._a.astype(np.int64), axis=ax, keepdims=keepdim)
        return Tensor(np.asarray(r, dtype=np.int64), int64)
    r = np.sum(x._f64(), axis=ax, keepdims=keepdim)
    _warn_fragile(_round_float64(np.asarray(r), fp32), x.dtype)
    return Tensor(_to_storage(_round_float64(np.asarray(r), x.dtype), x.dtype), x.dtype)


def mean(x, axis=None, keepdim=False):
    _check_tensor(x)
    ax = _axes(x, axis)
    if x.dtype.kind == "complex":
        with np.errstate(all="ignore"):
            r = np.mean(x._a.astype(np.complex128), axis=ax, keepdims=keepdim)
        return Tensor(_c(np.asarray(r).astype(x.dtype.storage)), x.dtype)
    d = x.dtype if x.dtype.is_float else fp32
    r = np.mean(x._f64(), axis=ax, keepdims=keepdim)
    _warn_fragile(_round_float64(np.asarray(r), fp32), d)
    return Tensor(_to_storage(_round_float64(np.asarray(r), d), d), d)


def _minmax(x, axis, keepdim, f):
    _check_tensor(x)
    if x.dtype.kind == "complex":
        _err("E0201", f"max/min are not defined for complex tensors ({x.dtype.name})")
    ax = _axes(x, axis)
    if x._a.size == 0:
        _err("E0500", "max/min of an empty tensor")
    if x.dtype.is_float:
        r = f(x._f64(), axis=ax, keepdims=keepdim)   # NaN propagates
        return Tensor(_to_storage(np.asarray(r), x.dtype), x.dtype)
    r = f(x._a, axis=ax, keepdims=keepdim)
    return Tensor(np.asarray(r, dtype=x.dtype.storage), x.dtype)


def max(x, axis=None, keepdim=False):  # noqa: A001
    return _minmax(x, axis, keepdim, np.max)


def min(x, axis=None, keepdim=False):  # noqa: A001
    return _minmax(x, axis, keepdim, np.min)


def _norm_dtype(x):
    return x.dtype if x.dtype.is_float else fp32


def softmax(x, axis=-1):
    _check_tensor(x)
    (ax,) = _axes(x, axis)
    v = x._f64()
    m = np.max(v, axis=ax, keepdims=True)
    e = np.exp(v - m)
    r = e / np.sum(e, axis=ax, keepdims=True)
    return _finish_float(r, _norm_dtype(x))


def logsumexp(x, axis=-1, keepdim=False):
    """log(sum(exp(x))) along axis: max-shifted, a max of +-inf taken as 0 (PyTorch's rule)."""
    _check_tensor(x)
    if x.ndim == 0:
        _err("E0200", "logsumexp: needs a tensor with at least 1 dimension, got a 0-d tensor")
    (ax,) = _axes(x, axis)
    v = x._f64()
    m = np.max(v, axis=ax, keepdims=True, initial=-np.inf)
    m = np.where(np.isinf(m), 0.0, m)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        r = np.log(np.sum(np.exp(v - m), axis=ax, keepdims=True)) + m
    if not keepdim:
        r = np.squeeze(r, axis=ax)
    return _finish_float(r, _norm_dtype(x))


def layernorm(x, weight=None, bias=None, eps=1e-5):
    _check_tensor(x)
    v = x._f64()
    mu = np.mean(v, axis=-1, keepdims=True)
    var = np.mean((v - mu) ** 2, axis=-1, keepdims=True)
    r = (v - mu) / np.sqrt(var + eps)
    n = x.shape[-1]
    if weight is not None:
        _check_tensor(weight, "weight")
        if weight.shape != (n,):
            _err("E0200", f"layernorm: weight shape {list(weight.shape)} does not match [{n}]")
        r = r * weight._f64()
    if bias is not None:
        _check_tensor(bias, "bias")
        if bias.shape != (n,):
            _err("E0200", f"layernorm: bias shape {list(bias.shape)} does not match [{n}]")
        r = r + bias._f64()
    return _finish_float(r, _norm_dtype(x))


def rmsnorm(x, weight=None, eps=1e-6):
    _check_tensor(x)
    v = x._f64()
    ms = np.mean(v * v, axis=-1, keepdims=True)
    r = v / np.sqrt(ms + eps)
    n = x.shape[-1]
    if weight is not None:
        _check_tensor(weight, "weight")
        if weight.shape != (n,):
            _err("E0200", f"rmsnorm: weight shape {list(weight.shape)} does not match [{n}]")
        r = r * weight._f64()
    return _finish_float(r, _norm_dtype(x))


# --------------------------------------------------------------------------------------
# shape ops


# ---- losses (SPEC §4): composed of rounded steps as Tessera composes them (decisions.md)

_NARROW = ("fp16", "bf16", "tf32", "fp8_e4m3", "fp8_e5m2")


def _lse_shifted(x, ax):
    s = x - max(x, axis=ax, keepdim=True)
    return s - log(sum(exp(s), axis=ax, keepdim=True))


def log_softmax(x, axis=-1):
    _check_tensor(x)
    if not x.dtype.is_float:
        _err("E0201", f"log_softmax: x must be a floating-point tensor, got {x.dtype.name}")
    (ax,) = _axes(x, axis)
    if x.dtype.name in _NARROW:
        return cast(_lse_shifted(cast(x, "fp32"), ax), x.dtype.name)
    return _lse_shifted(x, ax)


def _class_check(idx, n, fname, what):
    if idx.dtype.name not in ("int64", "int32", "int8"):
        _err("E0201", f"{fname}: indices must be an int tensor of class indices")
    a = idx._a.astype(np.int64)
    if a.size and (a.min() < 0 or a.max() >= n):
        _err("E0500", f"{fname}: index out of range for {n} {what}")


def one_hot(indices, n, dtype="fp32"):
    _check_tensor(indices)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        _err("E0101", "one_hot: the number of classes must be an int >= 1")
    _class_check(indices, n, "one_hot", "classes")
    a = indices._a.astype(np.int64)
    eq = Tensor(a[..., None] == np.arange(n, dtype=np.int64), _dtype("bool"))
    return cast(eq, dtype)


def cross_entropy(logits, targets, axis=-1, reduction="mean"):
    _check_tensor(logits)
    _check_tensor(targets)
    if reduction not in ("mean", "sum", "none"):
        _err("E0101", "cross_entropy: reduction must be 'mean', 'sum' or 'none'")
    (ax,) = _axes(logits, axis)
    want = list(logits.shape)
    c = want.pop(ax)
    if list(targets.shape) != want:
        _err("E0200", "cross_entropy: targets shape mismatch")
    lp = log_softmax(logits, ax)
    oh = one_hot(targets, c, lp.dtype.name)
    nd = logits.ndim
    if ax != nd - 1:
        perm = list(range(nd - 1))
        perm.insert(ax, nd - 1)
        oh = transpose(oh, tuple(perm))
    nll = neg(sum(lp * oh, axis=ax))
    if reduction == "mean":
        return mean(nll)
    if reduction == "sum":
        return sum(nll)
    return nll


def embedding(table, indices):
    _check_tensor(table)
    _check_tensor(indices)
    if table.ndim == 0:
        _err("E0200", "embedding: the table must have at least one dimension")
    _class_check(indices, table.shape[0], "embedding", "rows of the table")
    return table[indices]


def transpose(x, perm=None):
    _check_tensor(x)
    if perm is not None:
        perm = tuple(perm)
        if sorted(p % x.ndim for p in perm) != list(range(x.ndim)):
            _err("E0101", f"transpose: {list(perm)} is not a permutation of {x.ndim} axes")
    return Tensor(_c(np.transpose(x._a, perm)), x.dtype)


def reshape(x, shape):
    _check_tensor(x)
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    shape = tuple(shape)
    try:
        r = x._a.reshape(shape)
    except ValueError:
        _err("E0200", f"reshape: cannot reshape {list(x.shape)} to {list(shape)}")
    return Tensor(_c(r), x.dtype)


def stack(xs, axis=0):
    xs = list(xs)
    if not xs:
        _err("E0101", "stack of no tensors")
    for t in xs:
        _check_tensor(t)
        if t.shape != xs[0].shape:
            _err("E0200", "stack: every tensor must have the same shape")
    d = xs[0].dtype
    for t in xs[1:]:
        d = _promote(d, t.dtype)
    return Tensor(_c(np.stack([_cast_array(t._a, t.dtype, d) for t in xs], axis=axis)), d)


def clip(x, min=None, max=None):   # noqa: A002 (NumPy's names)
    r = x
    if min is not None:
        r = maximum(r, min)
    if max is not None:
        r = minimum(r, max)
    return r


def _order_values(x):
    return x._f64() if x.dtype.is_float else x._a.astype(np.int64)


def argmax(x, axis=None, keepdim=False):
    return _arg_extreme(x, axis, keepdim, np.argmax)


def argmin(x, axis=None, keepdim=False):
    return _arg_extreme(x, axis, keepdim, np.argmin)


def _arg_extreme(x, axis, keepdim, f):
    _check_tensor(x)
    v = _order_values(x)
    if axis is None:
        r = np.asarray(f(v.reshape(-1)))
        if keepdim:
            r = r.reshape(())
    else:
        r = f(v, axis=axis, keepdims=keepdim)
    return Tensor(_c(np.asarray(r, dtype=np.int64)), int64)


def sort(x, axis=-1, descending=False):
    _check_tensor(x)
    v = _order_values(x)
    r = np.sort(v, axis=axis, kind="stable")
    if descending:
        r = np.flip(r, axis=axis)
    if x.dtype.is_float:
        return Tensor(_to_storage(r, x.dtype), x.dtype)
    return Tensor(_c(r.astype(x.dtype.storage)), x.dtype)


def topk(x, k, axis=-1, largest=True):
    _check_tensor(x)
    v = _order_values(x).astype(np.float64)
    key = np.where(np.isnan(v), -np.inf, -v) if largest else np.where(np.isnan(v), np.inf, v)
    idx = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(k), axis=axis)
    vals = np.take_along_axis(_order_values(x), idx, axis=axis)
    if x.dtype.is_float:
        vt = Tensor(_to_storage(vals, x.dtype), x.dtype)
    else:
        vt = Tensor(_c(vals.astype(x.dtype.storage)), x.dtype)
    return (vt, Tensor(_c(idx.astype(np.int64)), int64))


def cumsum(x, axis=None):
    _check_tensor(x)
    v = _order_values(x)
    if axis is None:
        v = v.reshape(-1)
        axis = 0
    if x.dtype.is_float:
        return Tensor(_to_storage(np.cumsum(v, axis=axis), x.dtype), x.dtype)
    return Tensor(_c(np.cumsum(v, axis=axis).astype(np.int64)), int64)


def concat(xs, axis=0):
    xs = list(xs)
    if not xs:
        _err("E0101", "concat of no tensors")
    for t in xs:
        _check_tensor(t)
    d = xs[0].dtype
    for t in xs[1:]:
        d = _promote(d, t.dtype)
    nd = xs[0].ndim
    ax = axis % nd
    for t in xs:
        if t.ndim != nd or any(t.shape[i] != xs[0].shape[i] for i in range(nd) if i != ax):
            _err("E0200", f"concat: shapes {list(xs[0].shape)} and {list(t.shape)} do not match")
    arrs = [_cast_array(t._a, t.dtype, d) for t in xs]
    return Tensor(np.concatenate(arrs, axis=ax), d)


# --------------------------------------------------------------------------------------
# attention and comparison helpers


def flash_attention(Q, K, V, causal=False, scale=None):
    for t in (Q, K, V):
        _check_tensor(t)
    d = _promote(_promote(Q.dtype, K.dtype), V.dtype)
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        _err("E0200", f"flash_attention: shapes {list(Q.shape)}, {list(K.shape)}, {list(V.shape)} do not match")
    q, k, v = Q._f64(), K._f64(), V._f64()
    if scale is None:
        scale = 1.0 / math.sqrt(Q.shape[-1])
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if causal:
        lq, lk = s.shape[-2], s.shape[-1]
        mask = np.arange(lk)[None, :] <= np.arange(lq)[:, None]
        s = np.where(mask, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    p = e / np.sum(e, axis=-1, keepdims=True)
    return _finish_float(np.matmul(p, v), d if d.is_float else fp32)


def _conv_ints(v, what, dims, lo):
    vals = [v] * dims if isinstance(v, int) and not isinstance(v, bool) else list(v)
    if len(vals) != dims or any((not isinstance(i, int)) or i < lo for i in vals):
        _err("E0101", f"{what} must be an int or {dims} ints")
    return vals


def _conv(dims, x, w, bias, stride, padding, dilation, groups, algorithm):
    """Cross-correlation by scipy.signal.correlate per (image, output channel, input channel):
    the kernel dilated with zeros, the input zero-padded, the full-resolution result strided."""
    from scipy.signal import correlate

    _check_tensor(x)
    _check_tensor(w)
    d = _promote(x.dtype, w.dtype)
    if bias is not None:
        _check_tensor(bias)
        d = _promote(d, bias.dtype)
    d = d if d.is_float else fp32
    if algorithm not in ("auto", "direct", "fft"):
        _err("E0101", "algorithm must be auto, direct or fft")
    xv, wv = x._f64(), w._f64()
    batched = xv.ndim == dims + 2
    if not batched:
        xv = xv[None]
    if xv.ndim != dims + 2 or wv.ndim != dims + 2:
        _err("E0200", f"conv{dims}d: x {list(x.shape)}, weight {list(w.shape)}: bad ranks")
    n, cin = xv.shape[:2]
    cout, cin_g = wv.shape[:2]
    if groups < 1 or cin % groups or cout % groups or cin_g * groups != cin:
        _err("E0200", f"conv{dims}d: channels do not match groups={groups}")
    stride = _conv_ints(stride, "stride", dims, 1)
    dilation = _conv_ints(dilation, "dilation", dims, 1)
    k = list(wv.shape[2:])
    if padding == "same":
        if any(s != 1 for s in stride):
            _err("E0101", "padding=same needs stride 1")
        tot = [dl * (kk - 1) for dl, kk in zip(dilation, k)]
        pads = [(t // 2, t - t // 2) for t in tot]
    elif padding == "valid":
        pads = [(0, 0)] * dims
    else:
        pads = [(p, p) for p in _conv_ints(padding, "padding", dims, 0)]
    xp = np.pad(xv, [(0, 0), (0, 0)] + pads)
    kd = [dl * (kk - 1) + 1 for dl, kk in zip(dilation, k)]
    wd = np.zeros((cout, cin_g) + tuple(kd))
    wd[(slice(None), slice(None)) + tuple(slice(None, None, dl) for dl in dilation)] = wv
    full = [xp.shape[2 + i] - kd[i] + 1 for i in range(dims)]
    if any(f < 1 for f in full):
        _err("E0200", f"conv{dims}d: the kernel is larger than the padded input")
    out = np.zeros((n, cout) + tuple(len(range(0, f, s)) for f, s in zip(full, stride)))
    cout_g = cout // groups
    for b in range(n):
        for oc in range(cout):
            g = oc // cout_g
            acc = np.zeros(full)
            for c in range(cin_g):
                acc += correlate(xp[b, g * cin_g + c], wd[oc, c], mode="valid", method="direct")
            out[b, oc] = acc[tuple(slice(None, None, s) for s in stride)]
            if bias is not None:
                out[b, oc] += bias._f64()[oc]
    if not batched:
        out = out[0]
    return _finish_float(out, d)


def conv1d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, algorithm="auto"):
    return _conv(1, x, w, bias, stride, padding, dilation, groups, algorithm)


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, algorithm="auto"):
    return _conv(2, x, w, bias, stride, padding, dilation, groups, algorithm)


def _as_f64(x):
    if isinstance(x, Tensor):
        if x.dtype.kind == "complex":
            return x._a.astype(np.complex128)   # |a - b| is then the modulus, as NumPy's
        return x._f64()
    return np.asarray(float(x), dtype=np.float64)


def allclose(a, b, rtol=1e-5, atol=1e-8):
    x, y = _as_f64(a), _as_f64(b)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        _err("E0200", f"allclose: shapes {list(x.shape)} and {list(y.shape)} cannot be broadcast")
    return bool(np.all(np.abs(x - y) <= atol + rtol * np.abs(y)))


def max_abs_diff(a, b):
    x, y = _as_f64(a), _as_f64(b)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        _err("E0200", f"max_abs_diff: shapes {list(x.shape)} and {list(y.shape)} cannot be broadcast")
    d = np.abs(x - y)
    if d.size == 0:
        return 0.0
    return float(np.max(d))


def kernel(f):
    """`@op.kernel`: a kernel's result equals its body run eagerly (SPEC §5), so the oracle
    runs the body."""
    return f


# --------------------------------------------------------------------------------------
# module object


# --------------------------------------------------------------------------------------
# complex tensors and the FFT family (numpy.fft, NumPy 2's dtypes)


_COMPLEX_OK = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
               "pow": np.power, "eq": np.equal, "ne": np.not_equal}


def _complex_binary(opname, A, B, d):
    if opname not in _COMPLEX_OK:
        _err("E0201", f"`{_SYM[opname]}` is not defined for complex tensors ({d.name})")
    x, y = A._a.astype(d.storage), B._a.astype(d.storage)
    with np.errstate(all="ignore"):
        r = _COMPLEX_OK[opname](x, y)
    if opname in ("eq", "ne"):
        return Tensor(_c(np.asarray(r)), bool_)
    return Tensor(_c(np.asarray(r, dtype=d.storage)), d)


def complex(re, im):   # noqa: A001 (op.complex)
    for v in (re, im):
        if isinstance(v, Tensor) and v.dtype.kind == "complex":
            _err("E0201", "complex: the real and imaginary parts must be real tensors")
    if isinstance(re, Tensor) or isinstance(im, Tensor):
        A, B, p = _operands(re, im)
    else:
        A, B = tensor(re), tensor(im)
        p = _promote(A.dtype, B.dtype)
    d = c128 if p is fp64 else c64
    _bshape(A, B, "complex")
    re_, im_ = np.broadcast_arrays(_cast_array(A._a, A.dtype, d), _cast_array(B._a, B.dtype, d))
    r = np.empty(re_.shape, dtype=d.storage)
    r.real, r.imag = re_.real, im_.real    # each part as given (a -0.0 stays -0.0)
    return Tensor(r, d)


def real(x):
    _check_tensor(x)
    if x.dtype.kind != "complex":
        return x
    r = fp32 if x.dtype is c64 else fp64
    return Tensor(_c(np.real(x._a)).astype(r.storage), r)


def imag(x):
    _check_tensor(x)
    if x.dtype.kind != "complex":
        return zeros(x.shape, x.dtype)
    r = fp32 if x.dtype is c64 else fp64
    return Tensor(_c(np.imag(x._a)).astype(r.storage), r)


def conj(x):
    _check_tensor(x)
    return Tensor(_c(np.conj(x._a)), x.dtype) if x.dtype.kind == "complex" else x


def angle(x):
    _check_tensor(x)
    if x.dtype.kind == "complex":
        r = fp32 if x.dtype is c64 else fp64
        return Tensor(_c(np.angle(x._a)).astype(r.storage), r)
    r = fp64 if x.dtype is fp64 else fp32
    return Tensor(_c(np.angle(x._f64())).astype(r.storage), r)


def _fft_input(x, real_only=False):
    """The array numpy.fft transforms: c64/c128/fp32/fp64 as stored; the other floats as
    float32 (their values are exact there), ints and bools as float64 (NumPy's)."""
    _check_tensor(x)
    d = x.dtype
    if d.kind == "complex":
        if real_only:
            _err("E0201", f"rfft needs a real input, got {d.name}")
        return x._a
    if d.is_float:
        return x._a.astype(np.float64 if d is fp64 else np.float32)
    return x._a.astype(np.float64)


def _fft_result(r):
    r = np.asarray(r)
    d = {np.dtype(np.complex64): c64, np.dtype(np.complex128): c128,
         np.dtype(np.float32): fp32, np.dtype(np.float64): fp64}[r.dtype]
    return Tensor(_c(r), d)


def _fft_call(f, *args, **kw):
    norm = kw.get("norm")
    if norm is not None and not isinstance(norm, str):
        _err("E0101", "norm must be a string")
    try:
        return _fft_result(f(*args, **kw))
    except ValueError as e:
        msg = str(e)
        if "norm" in msg.lower():
            _err("E0101", msg)
        _err("E0200", msg)
    except (IndexError, np.exceptions.AxisError) as e:
        _err("E0500", str(e))


def _fft1(f, x, n, axis, norm, real_only=False):
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)):
        _err("E0101", "n must be an int")
    a = _fft_input(x, real_only)
    if a.ndim == 0:
        _err("E0500", "fft: axis -1 is out of range for a tensor with 0 dimensions")
    return _fft_call(f, a, n=n, axis=axis, norm=norm)


def fft(x, n=None, axis=-1, norm="backward"): return _fft1(np.fft.fft, x, n, axis, norm)
def ifft(x, n=None, axis=-1, norm="backward"): return _fft1(np.fft.ifft, x, n, axis, norm)
def rfft(x, n=None, axis=-1, norm="backward"): return _fft1(np.fft.rfft, x, n, axis, norm, True)
def irfft(x, n=None, axis=-1, norm="backward"): return _fft1(np.fft.irfft, x, n, axis, norm)


def _fft2(f, x, s, norm, real_only=False):
    a = _fft_input(x, real_only)
    if a.ndim < 2:
        _err("E0200", f"needs a tensor with at least 2 dimensions, got shape {list(a.shape)}")
    if s is not None:
        s = tuple(s)
        if len(s) != 2:
            _err("E0101", "s must give two lengths")
    return _fft_call(f, a, s=s, axes=(-2, -1), norm=norm)


def fft2(x, s=None, norm="backward"): return _fft2(np.fft.fft2, x, s, norm)
def ifft2(x, s=None, norm="backward"): return _fft2(np.fft.ifft2, x, s, norm)
def rfft2(x, s=None, norm="backward"): return _fft2(np.fft.rfft2, x, s, norm, True)
def irfft2(x, s=None, norm="backward"): return _fft2(np.fft.irfft2, x, s, norm)


class _OpModule:
    """The `op` global of a .tsr script."""

    def __init__(self):
        g = globals()
        names = ["tensor", "zeros", "ones", "full", "arange", "linspace", "eye", "rand", "randn", "randint", "seed", "cast",
                 "neg", "exp", "log", "sqrt", "rsqrt", "abs", "tanh", "sigmoid", "relu", "gelu",
                 "silu", "erf", "sin", "cos", "floor", "ceil", "round", "sign", "isnan",
                 "isfinite", "maximum", "minimum", "where", "matmul", "sum", "mean", "max", "min",
                 "softmax", "log_softmax", "one_hot", "cross_entropy", "embedding", "layernorm", "rmsnorm", "transpose", "reshape", "concat", "stack", "clip",
                 "argmax", "argmin", "sort", "topk", "cumsum", "logical_and", "logical_or",
                 "logical_not",
                 "flash_attention", "conv1d", "conv2d", "allclose", "max_abs_diff", "kernel",
                 "complex", "real", "imag", "conj", "angle", "fft", "ifft", "rfft", "irfft",
                 "fft2", "ifft2", "rfft2", "irfft2"]
        names += ["logsumexp"]
        for n in names:
            object.__setattr__(self, n, g[n])
        for n, d in _CANON.items():
            object.__setattr__(self, n if n != "bool" else "bool", d)
        for alias, canon in _ALIASES.items():
            object.__setattr__(self, alias, _CANON[canon])
        object.__setattr__(self, "Tensor", Tensor)
        # A kernel's result equals its body run eagerly (SPEC §5): the oracle runs the body.
        object.__setattr__(self, "kernel", lambda f: f)

    def __getattr__(self, name):
        _err("E0100", f"module 'op' has no attribute '{name}'")

    def __repr__(self):
        return "<module op>"


op = _OpModule()


def _selfcheck():
    for seed in (0, 1, 42, -1, 123456789):
        v = _bits_vec(seed, np.arange(5, dtype=np.uint64))
        assert [int(t) for t in v] == [_bits_int(seed, i) for i in range(5)], seed


_selfcheck()
