//! Launching and timing a kernel on a [`Device`]: uploading its buffers (outputs zeroed or
//! poisoned), the launch on the stream, waiting for its event (buffers leaked on a timeout),
//! reading the outputs back.

use super::*;

impl Device {
    /// Waits for `ev` (recorded after the work), up to [`Device::timeout`].
    fn wait(&self, ev: &Event, what: &dyn Fn() -> String) -> Result<(), CudaError> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(20);
        loop {
            // SAFETY: a live event.
            let r = unsafe { sys::cuEventQuery(ev.0) };
            match r {
                sys::CUresult::CUDA_SUCCESS => return Ok(()),
                sys::CUresult::CUDA_ERROR_NOT_READY => {}
                other => return Err(driver_error(what(), other)),
            }
            if start.elapsed() > self.timeout {
                return Err(CudaError {
                    what: what(),
                    name: "timeout".into(),
                    detail: format!(
                        "the kernel did not finish within {:.0} s (TESSERA_CUDA_TIMEOUT)",
                        self.timeout.as_secs_f64()
                    ),
                    fault: true,
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// Uploads `buffers` (outputs are zeroed, or poisoned; the status word `status`, when
    /// there is one, is always zeroed: a set word means the kernel reported an error) and
    /// returns the device copies.
    fn upload(
        &self,
        name: &str,
        buffers: &[Vec<u8>],
        outputs: &[usize],
        status: Option<usize>,
    ) -> Result<Vec<Buffer>, CudaError> {
        let mut dev = Vec::with_capacity(buffers.len());
        for (i, b) in buffers.iter().enumerate() {
            let d = Buffer::new(b.len(), &|| format!("argument {i} of '{name}'"))?;
            // SAFETY: `d` holds at least b.len() bytes; the host slice is valid for the call.
            unsafe {
                if outputs.contains(&i) {
                    let fill = if self.poison && status != Some(i) {
                        0xFF
                    } else {
                        0
                    };
                    check(sys::cuMemsetD8_v2(d.ptr, fill, b.len()), || {
                        format!("clearing the output of '{name}'")
                    })?;
                } else if !b.is_empty() {
                    check(
                        sys::cuMemcpyHtoD_v2(d.ptr, b.as_ptr().cast(), b.len()),
                        || format!("copying argument {i} of '{name}' to the GPU"),
                    )?;
                }
            }
            dev.push(d);
        }
        Ok(dev)
    }

    /// Launches `f` on the stream (asynchronous).
    fn launch(
        &self,
        f: sys::CUfunction,
        name: &str,
        g: Geometry,
        dev: &[Buffer],
        scalars: &[u32],
    ) -> Result<(), CudaError> {
        let mut ptrs: Vec<sys::CUdeviceptr> = dev.iter().map(|b| b.ptr).collect();
        let mut scalars = scalars.to_vec();
        let mut params: Vec<*mut c_void> = ptrs
            .iter_mut()
            .map(|p| (p as *mut sys::CUdeviceptr).cast())
            .chain(scalars.iter_mut().map(|s| (s as *mut u32).cast()))
            .collect();
        // SAFETY: one parameter pointer per kernel parameter, in order (pointers then u32
        // scalars, the Target IR's parameter list); they live until the call returns, which
        // copies the values.
        let r = unsafe {
            sys::cuLaunchKernel(
                f,
                g.grid[0],
                g.grid[1],
                g.grid[2],
                g.block[0],
                g.block[1],
                g.block[2],
                g.dynamic_shared,
                self.stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(r, || format!("launching kernel '{name}'"))
    }

    /// Runs `k` over `g` with `buffers` (one per pointer parameter, in order) and `scalars`;
    /// the buffers `written` names are read back into `buffers`.
    pub fn run(
        &mut self,
        k: &KernelImage,
        g: Geometry,
        buffers: &mut [Vec<u8>],
        scalars: &[u32],
        written: Written,
    ) -> Result<(), CudaError> {
        self.bind()?;
        let f = self.function(k, g.dynamic_shared)?;
        let Written { outputs, status } = written;
        let dev = self.upload(k.name, buffers, outputs, status)?;
        self.launch(f, k.name, g, &dev, scalars)?;
        let done = Event::new()?;
        // SAFETY: a live event and stream.
        check(unsafe { sys::cuEventRecord(done.0, self.stream) }, || {
            format!("waiting for kernel '{}'", k.name)
        })?;
        if let Err(e) = self.wait(&done, &|| format!("running kernel '{}'", k.name)) {
            // The kernel may still run: freeing its buffers would wait for it (or free memory
            // it uses). They are leaked; the caller rebuilds the context after a fault.
            std::mem::forget(dev);
            std::mem::forget(done);
            return Err(e);
        }
        for &i in outputs {
            let (Some(host), Some(d)) = (buffers.get_mut(i), dev.get(i)) else {
                continue;
            };
            if host.is_empty() {
                continue;
            }
            // SAFETY: the device buffer holds host.len() bytes; the launch has finished.
            let r = unsafe { sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), d.ptr, host.len()) };
            check(r, || format!("copying the result of '{}' back", k.name))?;
        }
        Ok(())
    }

    /// Times `k`: `warmup` launches, then `reps` launches each between two CUDA events; the
    /// time of each timed launch in µs. The buffers are uploaded once and not read back.
    pub fn time(
        &mut self,
        k: &KernelImage,
        g: Geometry,
        buffers: &[Vec<u8>],
        scalars: &[u32],
        written: Written,
        runs: Runs,
    ) -> Result<Vec<f64>, CudaError> {
        let Runs { warmup, reps } = runs;
        self.bind()?;
        let f = self.function(k, g.dynamic_shared)?;
        let dev = self.upload(k.name, buffers, written.outputs, written.status)?;
        let what = || format!("timing kernel '{}'", k.name);
        for _ in 0..warmup {
            self.launch(f, k.name, g, &dev, scalars)?;
        }
        let mut events = Vec::with_capacity(reps as usize + 1);
        for _ in 0..=reps {
            events.push(Event::new()?);
        }
        // SAFETY: live events and stream throughout.
        unsafe {
            check(sys::cuEventRecord(events[0].0, self.stream), what)?;
            for e in events.iter().skip(1) {
                self.launch(f, k.name, g, &dev, scalars)?;
                check(sys::cuEventRecord(e.0, self.stream), what)?;
            }
        }
        if let Some(last) = events.last() {
            if let Err(e) = self.wait(last, &what) {
                // As in `run`: the launches may still use the buffers and events.
                std::mem::forget(dev);
                std::mem::forget(events);
                return Err(e);
            }
        }
        let mut out = Vec::with_capacity(reps as usize);
        for w in events.windows(2) {
            let mut ms = 0f32;
            // SAFETY: both events recorded on this stream and complete.
            check(
                unsafe { sys::cuEventElapsedTime(&mut ms, w[0].0, w[1].0) },
                what,
            )?;
            out.push(f64::from(ms) * 1e3);
        }
        Ok(out)
    }
}
