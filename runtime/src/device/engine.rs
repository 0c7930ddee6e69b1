//! The execution engine of a session: the devices it opened, the current one, and the
//! compiled-kernel cache's counters. stdlib asks it which device runs a call and borrows that
//! device for the call; nothing outside the runtime names a device kind.
//!
//! The cached-call path on the cpu reads two cells ([`Engine::current`], the cache counters):
//! no allocation and no lock.

use super::registry::{self, Entry, DEVICES};
use super::Device;
use crate::Tensor;
use std::cell::{Cell, RefCell, RefMut};
use std::collections::HashMap;
use std::hash::Hash;
use std::rc::{Rc, Weak};
use tessera_compiler::graph::{Graph, ValueId};

/// Asked by [`Engine::run_on`] at each op: launch it on the device (`Some`), or leave it to
/// the host (`None`).
pub type Launch<'a, E> =
    dyn FnMut(Option<&mut dyn Device>, ValueId, &[Tensor]) -> Option<Result<Vec<Tensor>, E>> + 'a;

/// The devices of a session and the one kernels run on now.
pub struct Engine {
    /// One slot per [`DEVICES`] line: the device once opened (kept while the session switches
    /// away, so switching back does not open it again).
    slots: Vec<RefCell<Option<Box<dyn Device>>>>,
    current: Cell<&'static Entry>,
    /// The current device was picked by `auto`: a launch that fails there runs on the cpu
    /// with a warning instead of failing the call.
    auto_chosen: Cell<bool>,
    /// Calls served from the compiled-kernel cache, and calls that compiled.
    hits: Cell<u64>,
    misses: Cell<u64>,
    /// The compiled-kernel cache of each kernel object, by its number.
    caches: RefCell<HashMap<u64, Rc<dyn Store>>>,
    next_cache: Cell<u64>,
}

/// What the engine does with a kernel object's cache without knowing its types.
trait Store {
    fn len(&self) -> usize;
    fn clear(&self);
}

/// One kernel object's compiled kernels: for each key, the entries compiled under it (the
/// owner tells them apart). The engine holds it; the owner holds a [`KernelCache`] handle to
/// it, so a cached call looks it up directly.
pub struct Kernels<K, V>(RefCell<HashMap<K, Vec<V>>>);

impl<K: Eq + Hash, V> Kernels<K, V> {
    /// The first entry under `key` that `pick` takes, mapped by it.
    #[inline]
    pub fn find<R>(&self, key: &K, pick: impl FnMut(&V) -> Option<R>) -> Option<R> {
        self.0.borrow().get(key)?.iter().find_map(pick)
    }

    /// Adds `v` under `key`.
    pub fn insert(&self, key: K, v: V) {
        self.0.borrow_mut().entry(key).or_default().push(v);
    }
}

impl<K, V> Store for Kernels<K, V> {
    fn len(&self) -> usize {
        self.0.borrow().values().map(Vec::len).sum()
    }
    fn clear(&self) {
        self.0.borrow_mut().clear();
    }
}

/// A kernel object's handle to its cache in the engine; dropping it drops the cache there.
pub struct KernelCache<K: 'static, V: 'static> {
    id: u64,
    kernels: Rc<Kernels<K, V>>,
    engine: Weak<Engine>,
}

impl<K, V> std::ops::Deref for KernelCache<K, V> {
    type Target = Kernels<K, V>;
    fn deref(&self) -> &Kernels<K, V> {
        &self.kernels
    }
}

impl<K, V> Drop for KernelCache<K, V> {
    fn drop(&mut self) {
        if let Some(e) = self.engine.upgrade() {
            if let Ok(mut c) = e.caches.try_borrow_mut() {
                c.remove(&self.id);
            }
        }
    }
}

impl Default for Engine {
    fn default() -> Engine {
        Engine::new()
    }
}

/// Why [`Engine::select`] could not switch: the device and the reason it cannot be used.
#[derive(Debug)]
pub struct Unavailable {
    pub device: &'static Entry,
    pub why: String,
}

impl Engine {
    /// An engine on the cpu, with no device opened.
    pub fn new() -> Engine {
        Engine {
            slots: DEVICES.iter().map(|_| RefCell::new(None)).collect(),
            current: Cell::new(registry::cpu()),
            auto_chosen: Cell::new(false),
            hits: Cell::new(0),
            misses: Cell::new(0),
            caches: RefCell::new(HashMap::new()),
            next_cache: Cell::new(0),
        }
    }

    /// A new, empty compiled-kernel cache for one kernel object, held by the engine until the
    /// handle is dropped.
    pub fn kernel_cache<K: 'static, V: 'static>(self: &Rc<Engine>) -> KernelCache<K, V> {
        let id = self.next_cache.get();
        self.next_cache.set(id + 1);
        let kernels = Rc::new(Kernels(RefCell::new(HashMap::new())));
        self.caches
            .borrow_mut()
            .insert(id, kernels.clone() as Rc<dyn Store>);
        KernelCache {
            id,
            kernels,
            engine: Rc::downgrade(self),
        }
    }

    /// The compiled kernels the engine holds, over every kernel object.
    pub fn cached_kernels(&self) -> usize {
        self.caches.borrow().values().map(|c| c.len()).sum()
    }

    /// Forgets every compiled kernel (the next call of each kernel compiles again).
    pub fn clear_kernels(&self) {
        for c in self.caches.borrow().values() {
            c.clear();
        }
    }

    /// The device kernels run on now.
    #[inline]
    pub fn current(&self) -> &'static Entry {
        self.current.get()
    }

    /// Whether `auto` picked the current device ([`Engine::select`] with `None`).
    pub fn auto_chosen(&self) -> bool {
        self.auto_chosen.get()
    }

    fn slot(&self, e: &Entry) -> Option<&RefCell<Option<Box<dyn Device>>>> {
        self.slots.get(e.index())
    }

    /// Whether device `e` is open.
    pub fn is_open(&self, e: &Entry) -> bool {
        self.slot(e).is_some_and(|s| s.borrow().is_some())
    }

    /// Opens device `e` unless it is open already.
    pub fn open(&self, e: &'static Entry) -> Result<(), Unavailable> {
        if self.is_open(e) {
            return Ok(());
        }
        let d = (e.open)().map_err(|why| Unavailable { device: e, why })?;
        if let Some(s) = self.slot(e) {
            *s.borrow_mut() = Some(d);
        }
        Ok(())
    }

    /// Makes `want` the current device, opening it first; `None` is `auto`: the first
    /// [`Entry::auto`] device that is open or opens, else the cpu. On an error the current
    /// device stays.
    pub fn select(&self, want: Option<&'static Entry>) -> Result<(), Unavailable> {
        match want {
            Some(e) => {
                self.open(e)?;
                self.current.set(e);
                self.auto_chosen.set(false);
            }
            None => {
                let picked = DEVICES
                    .iter()
                    .copied()
                    .filter(|e| e.auto)
                    .find(|e| self.open(e).is_ok());
                self.current.set(picked.unwrap_or(registry::cpu()));
                self.auto_chosen.set(picked.is_some());
            }
        }
        Ok(())
    }

    /// Closes device `e` (it was lost); the current device stays (see [`Engine::fall_back`]).
    pub fn close(&self, e: &Entry) {
        if let Some(s) = self.slot(e) {
            *s.borrow_mut() = None;
        }
    }

    /// Kernels run on the cpu from now on (the current device was lost).
    pub fn fall_back(&self) {
        self.current.set(registry::cpu());
        self.auto_chosen.set(false);
    }

    /// Device `e`, borrowed for one call; `None` when it is not open.
    pub fn borrow(&self, e: &Entry) -> Option<RefMut<'_, Box<dyn Device>>> {
        let s = self.slot(e)?.try_borrow_mut().ok()?;
        RefMut::filter_map(s, Option::as_mut).ok()
    }

    /// Runs a call's graph on the host: the interpreter evaluates every op (the cpu device).
    #[inline]
    pub fn run(
        &self,
        g: &Graph,
        inputs: &[Tensor],
        captures: &[Tensor],
    ) -> crate::Result<Vec<Tensor>> {
        crate::interp::run(g, inputs, captures)
    }

    /// Runs a call's graph with device `e` borrowed for the call: the interpreter asks
    /// `launch` at each op, with the device (`None` when it is not open, or is in use), to
    /// launch it; `None` from `launch` evaluates the op on the host.
    pub fn run_on<E: From<crate::RuntimeError>>(
        &self,
        e: &Entry,
        g: &Graph,
        inputs: &[Tensor],
        captures: &[Tensor],
        launch: &mut Launch<'_, E>,
    ) -> Result<Vec<Tensor>, E> {
        let mut d = self.borrow(e);
        crate::interp::run_with(g, inputs, captures, &mut |id, operands| {
            let dev: Option<&mut dyn Device> = match d.as_mut() {
                Some(b) => Some(&mut ***b),
                None => None,
            };
            launch(dev, id, operands)
        })
    }

    /// The current device's label ([`Device::label`]) when it is open, else its name.
    pub fn label(&self) -> String {
        let e = self.current();
        self.borrow(e)
            .map_or_else(|| e.name.to_string(), |d| d.label())
    }

    /// The compile cache served a call.
    #[inline]
    pub fn hit(&self) {
        self.hits.set(self.hits.get() + 1);
    }

    /// A call compiled its kernel.
    pub fn miss(&self) {
        self.misses.set(self.misses.get() + 1);
    }

    /// `(hits, misses)` of the compile cache so far.
    pub fn cache_counts(&self) -> (u64, u64) {
        (self.hits.get(), self.misses.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_and_falls_back() {
        let e = Engine::new();
        assert_eq!(e.current().name, "cpu");
        let emu = registry::find("emu").unwrap();
        e.select(Some(emu)).unwrap();
        assert_eq!(e.current().name, "emu");
        assert!(e.is_open(emu));
        assert!(!e.auto_chosen());
        assert_eq!(e.borrow(emu).unwrap().name(), "emu");
        e.fall_back();
        assert_eq!(e.current().name, "cpu");
        e.close(emu);
        assert!(!e.is_open(emu));
    }

    #[test]
    fn the_engine_holds_each_kernel_cache_until_its_owner_drops_it() {
        let e = Rc::new(Engine::new());
        let a = e.kernel_cache::<u64, &str>();
        let b = e.kernel_cache::<u64, &str>();
        a.insert(1, "x");
        a.insert(1, "y");
        b.insert(2, "z");
        assert_eq!(a.find(&1, |v| (*v == "y").then_some(*v)), Some("y"));
        assert_eq!(a.find(&2, |v| Some(*v)), None);
        assert_eq!(e.cached_kernels(), 3);
        drop(b);
        assert_eq!(e.cached_kernels(), 2);
        e.clear_kernels();
        assert_eq!(e.cached_kernels(), 0);
        assert_eq!(a.find(&1, |v| Some(*v)), None);
    }

    #[test]
    fn the_registry_lists_every_device_once() {
        let names: Vec<&str> = DEVICES.iter().map(|e| e.name).collect();
        assert_eq!(names, ["cpu", "emu", "cuda", "vulkan"]);
        for (i, e) in DEVICES.iter().enumerate() {
            assert_eq!(e.index(), i);
            assert_eq!(registry::find(e.name), Some(*e));
        }
        assert_eq!(registry::choices_text(), "auto, cpu, emu, cuda, vulkan");
    }
}
