//! The profile table: times and rates as text, the rows of each kernel (measured and model),
//! the totals, the `other` row of the kernels beyond the top ones, and the emulator's counter
//! tables.

use super::*;

/// A time with a unit, always 11 characters wide (`   12.345 µs`).
pub fn fmt_time(us: f64) -> String {
    if !us.is_finite() {
        return format!("{:>11}", "-");
    }
    let (v, unit) = if us < 1.0 {
        (us * 1e3, "ns")
    } else if us < 1e3 {
        (us, "µs")
    } else if us < 1e6 {
        (us / 1e3, "ms")
    } else {
        (us / 1e6, "s ")
    };
    format!("{v:>8.3} {unit}")
}

pub(crate) fn fmt_rate(v: f64, width: usize, prec: usize) -> String {
    if v.is_finite() {
        format!("{v:>width$.prec$}")
    } else {
        format!("{:>width$}", "-")
    }
}

/// The name a row shows: the kernel and its result's shape (`mlp_matmul[64x128]`); rows of a
/// mesh or a pipeline carry their shapes in the `tile` column.
pub fn row_label(r: &Row) -> String {
    if r.mesh.is_some() || r.shape.is_empty() {
        return r.name.clone();
    }
    let dims: Vec<String> = r.shape.iter().map(|d| d.to_string()).collect();
    format!("{}[{}]", r.name, dims.join("x"))
}

/// Sums of one (source, device) group of rows, for the totals at the end of the table.
#[derive(Default)]
pub(crate) struct Total {
    pub(crate) launches: u64,
    pub(crate) us: f64,
    pub(crate) bytes: f64,
}

/// Adds one row's launches, time (µs) and bytes to the sums of its (source, device).
pub(crate) fn add_total(
    sums: &mut Vec<((&'static str, String), Total)>,
    source: &'static str,
    device: &str,
    n: u32,
    us: f64,
    bytes: f64,
) {
    let key = (source, device.to_string());
    let i = match sums.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            sums.push((key, Total::default()));
            sums.len() - 1
        }
    };
    let tot = &mut sums[i].1;
    tot.launches += u64::from(n);
    if us.is_finite() {
        tot.us += us;
    }
    if bytes.is_finite() {
        tot.bytes += bytes;
    }
}

/// How many kernels a profile table shows by default; the rest are summed in one `other` row
/// per device (`graph.profile(..., top=N)` changes it).
pub const TOP_KERNELS: usize = 20;

/// Which rows to show: all when there are at most `top`, else the `top` with the most time by
/// the model (the measured total for a row the model has no figure for), in their order.
pub(crate) fn top_rows(rows: &[Row], top: Option<usize>) -> Vec<bool> {
    let Some(top) = top.filter(|&n| rows.len() > n) else {
        return vec![true; rows.len()];
    };
    // the model's total first: the same kernels are shown run after run (a measured time
    // changes), the ones that would cost most on the target
    let weight = |r: &Row| -> f64 {
        if let Some(e) = &r.estimate {
            e.latency_us * f64::from(r.launches)
        } else if let Some(m) = &r.mesh {
            m.latency_us * f64::from(r.launches)
        } else {
            r.samples.iter().sum()
        }
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| weight(&rows[b]).total_cmp(&weight(&rows[a])));
    let mut keep = vec![false; rows.len()];
    for &i in order.iter().take(top) {
        keep[i] = true;
    }
    keep
}

/// The µs of a [`fmt_time`] text (NaN for `-`).
pub(crate) fn parse_time(s: &str) -> f64 {
    let mut it = s.split_whitespace();
    let (Some(v), Some(unit)) = (it.next(), it.next()) else {
        return f64::NAN;
    };
    let v: f64 = v.parse().unwrap_or(f64::NAN);
    v * match unit {
        "ns" => 1e-3,
        "µs" => 1.0,
        "ms" => 1e3,
        _ => 1e6,
    }
}

/// The profile table of `rows` (SPEC §6 columns): one row per kernel, shapes and `.tsr` line
/// with its launch count, total time and median latency, measured and model rows apart, then
/// the totals of each device (time and launches) and the bytes moved.
pub fn table(rows: &[Row], title: Option<String>) -> TableObj {
    table_top(rows, title, Some(TOP_KERNELS))
}

/// The table rows of one profiled kernel (measured, mesh model, cost model), adding their sums
/// to `totals`; `estimated` is set when an occupancy comes from the register estimate.
pub(crate) fn kernel_rows(
    r: &Row,
    totals: &mut Vec<((&'static str, String), Total)>,
    estimated: &mut bool,
) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let name = row_label(r);
    let count = r.launches.to_string();
    if let (Some(m), Some(dev)) = (median(&r.samples), &r.device) {
        let (flops, bytes) = r
            .estimate
            .as_ref()
            .map_or((f64::NAN, f64::NAN), |e| (e.flops, e.min_bytes));
        let sum: f64 = r.samples.iter().sum();
        let s = m * 1e-6;
        add_total(
            totals,
            "measured",
            dev,
            r.launches,
            sum,
            bytes * f64::from(r.launches),
        );
        rows.push(vec![
            name.clone(),
            r.line.clone(),
            r.tile.clone(),
            dev.clone(),
            count.clone(),
            fmt_time(sum),
            fmt_time(m),
            "-".into(),
            fmt_rate(bytes / s / 1e9, 9, 2),
            fmt_rate(flops / s / 1e12, 8, 4),
            "-".into(),
            "measured".into(),
        ]);
    } else if let (Some(_), Some(dev)) = (&r.counters, &r.device) {
        add_total(totals, "measured", dev, r.launches, f64::NAN, f64::NAN);
        let mut row = vec![
            name.clone(),
            r.line.clone(),
            r.tile.clone(),
            dev.clone(),
            count.clone(),
        ];
        row.push(format!("{:>11}", "-"));
        row.push(format!("{:>11}", "-"));
        row.extend(["-", "-", "-", "-"].map(String::from));
        row.push("measured".into());
        rows.push(row);
    }
    if let Some(m) = &r.mesh {
        let total = m.latency_us * f64::from(r.launches);
        add_total(totals, "model", &m.device, r.launches, total, f64::NAN);
        rows.push(vec![
            name.clone(),
            r.line.clone(),
            r.tile.clone(),
            m.device.clone(),
            count.clone(),
            fmt_time(total),
            fmt_time(m.latency_us),
            "-".into(),
            fmt_rate(m.gbps, 9, 2),
            fmt_rate(m.tflops, 8, 4),
            m.bound.to_string(),
            "model".into(),
        ]);
    }
    if let Some(e) = &r.estimate {
        let star = if e.reg_source == RegSource::Estimate {
            *estimated = true;
            "*"
        } else {
            " "
        };
        let total = e.latency_us * f64::from(r.launches);
        add_total(
            totals,
            "model",
            r.target.name(),
            r.launches,
            total,
            e.min_bytes * f64::from(r.launches),
        );
        rows.push(vec![
            name,
            r.line.clone(),
            r.tile.clone(),
            r.target.name().to_string(),
            count,
            fmt_time(total),
            fmt_time(e.latency_us),
            format!("{:>5.1}%{star}", e.occupancy.fraction * 100.0),
            fmt_rate(e.gbps(), 9, 2),
            fmt_rate(e.tflops(), 8, 4),
            e.bound.name().to_string(),
            "model".into(),
        ]);
    }
    rows
}

/// [`table`] showing the `top` kernels with the most time (every kernel with `None`).
pub fn table_top(rows: &[Row], title: Option<String>, top: Option<usize>) -> TableObj {
    let mut t = Table::new(&[
        "op",
        "line",
        "tile",
        "device",
        "count",
        "total",
        "latency",
        "occupancy",
        "GB/s",
        "TFLOP/s",
        "bound",
        "source",
    ]);
    t.right = vec![4, 5, 6, 7, 8, 9];
    t.title = title;
    let mut estimated = false;
    // (source, device) → sums, in the order they first appear
    let mut totals: Vec<((&'static str, String), Total)> = Vec::new();
    // the same for the rows folded into `other` (beyond the `top` kernels)
    let mut others: Vec<((&'static str, String), Total)> = Vec::new();
    let keep = top_rows(rows, top);
    let folded = keep.iter().filter(|k| !**k).count();
    let mut moved = 0.0f64;
    for (r, keep) in rows.iter().zip(keep) {
        let before = t.rows.len();
        let bytes_each = r.estimate.as_ref().map_or(f64::NAN, |e| e.min_bytes);
        if bytes_each.is_finite() {
            moved += bytes_each * f64::from(r.launches);
        }
        let rows = kernel_rows(r, &mut totals, &mut estimated);
        t.rows.extend(rows);
        if !keep {
            // folded: its rows go into `other`, by source and device
            for row in t.rows.drain(before..) {
                let us = parse_time(&row[5]);
                let n: u32 = row[4].parse().unwrap_or(0);
                let source = if row[11] == "measured" {
                    "measured"
                } else {
                    "model"
                };
                add_total(&mut others, source, &row[3], n, us, f64::NAN);
            }
        }
    }
    for ((source, device), tot) in &others {
        t.rows.push(vec![
            format!("other ({folded} kernels)"),
            String::new(),
            String::new(),
            device.clone(),
            tot.launches.to_string(),
            if tot.us > 0.0 {
                fmt_time(tot.us)
            } else {
                format!("{:>11}", "-")
            },
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            source.to_string(),
        ]);
    }
    if folded > 0 {
        t.notes.push(format!(
            "the {} kernels with the most time are shown; {folded} more are summed in `other` (graph.profile(..., top=None) shows every row)",
            rows.len() - folded
        ));
    }
    if rows.is_empty() {
        t.notes.push("no kernel was launched".into());
    }
    for ((source, device), tot) in &totals {
        let time = if tot.us > 0.0 {
            fmt_time(tot.us)
        } else {
            format!("{:>11}", "-")
        };
        let gbps = if tot.us > 0.0 && tot.bytes > 0.0 {
            tot.bytes / (tot.us * 1e-6) / 1e9
        } else {
            f64::NAN
        };
        let blank = String::new;
        t.rows.push(vec![
            "total".into(),
            blank(),
            blank(),
            device.clone(),
            tot.launches.to_string(),
            time,
            blank(),
            blank(),
            fmt_rate(gbps, 9, 2),
            blank(),
            blank(),
            source.to_string(),
        ]);
    }
    if !rows.is_empty() {
        let launches: u64 = rows.iter().map(|r| u64::from(r.launches)).sum();
        let mut note = format!(
            "count: launches of the kernel with these shapes from this line; total: their time; latency: the median launch; {launches} launch(es)"
        );
        if moved > 0.0 {
            note.push_str(&format!(
                " moved {} (the model's bytes: each kernel's inputs and outputs)",
                fmt_bytes(moved)
            ));
        }
        t.notes.push(note);
    }
    if estimated {
        t.notes
            .push("* occupancy from registers estimated on the Target IR (ptxas not used)".into());
    }
    let mut parts = vec![t];
    parts.extend(counter_tables(rows));
    TableObj {
        type_name: "profile",
        parts,
        lines: rows.iter().flat_map(one_lines).collect(),
    }
}

/// The seeds' one-line form of a kernel's rows (`profile.lines()`, SPEC §6):
/// `MatMul[128x128x32]  latency=2.43µs  occupancy=25.0%  hbm=0.5%  (sm_90 model)`, one line
/// for the model and one for a measured latency; `hbm` is the bandwidth as a fraction of the
/// target's HBM (none for a cpu measurement), `occupancy` the model's.
fn one_lines(r: &Row) -> Vec<String> {
    let kind = match r.kind.name() {
        "matmul" => "MatMul".to_string(),
        k => k
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
            })
            .collect(),
    };
    let head = format!("{kind}[{}]", r.tile);
    let t = |us: f64| fmt_time(us).trim().replace(' ', "");
    let hbm = r.target.spec().hbm_gbps;
    let mut out = Vec::new();
    if let Some(e) = &r.estimate {
        out.push(format!(
            "{head}  latency={}  occupancy={:.1}%  hbm={:.1}%  ({} model)",
            t(e.latency_us),
            e.occupancy.fraction * 100.0,
            100.0 * e.gbps() / hbm,
            r.target.name()
        ));
    }
    if let (Some(m), Some(dev)) = (median(&r.samples), &r.device) {
        let mut line = format!("{head}  latency={}", t(m));
        if let Some(e) = r.estimate.as_ref().filter(|_| dev != "cpu") {
            let gbps = e.min_bytes / (m * 1e-6) / 1e9;
            line.push_str(&format!("  hbm={:.1}%", 100.0 * gbps / hbm));
        }
        line.push_str(&format!("  ({dev} measured)"));
        out.push(line);
    }
    out
}

/// Bytes with a decimal unit: `512 B`, `1.50 kB`, `12.35 MB`, `3.20 GB`.
pub fn fmt_bytes(b: f64) -> String {
    if b < 1e3 {
        format!("{b:.0} B")
    } else if b < 1e6 {
        format!("{:.2} kB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.2} MB", b / 1e6)
    } else {
        format!("{:.2} GB", b / 1e9)
    }
}

pub(crate) fn shape_text(s: &[usize]) -> String {
    let v: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// The emulator's counters of the rows that have them: a memory table and an instruction-mix
/// table (none when no row was counted).
pub(crate) fn counter_tables(rows: &[Row]) -> Vec<Table> {
    let counted: Vec<(String, &Counters)> = rows
        .iter()
        .filter_map(|r| {
            let name = if r.launches > 1 {
                format!("{} ×{}", row_label(r), r.launches)
            } else {
                row_label(r)
            };
            r.counters.as_ref().map(|c| (name, c))
        })
        .collect();
    if counted.is_empty() {
        return vec![];
    }
    let mut mem = Table::new(&[
        "op",
        "warp inst",
        "shared req",
        "wavefronts",
        "bank conflicts",
        "ldmatrix conflicts",
        "global ld req",
        "ld sectors/req",
        "global st req",
        "st sectors/req",
    ]);
    mem.right = (1..10).collect();
    mem.title = Some("emu memory counters (exact, per kernel, summed over launches)".into());
    let per = |v: f64| {
        if v.is_finite() {
            format!("{v:.2}")
        } else {
            "-".into()
        }
    };
    for (name, c) in &counted {
        mem.rows.push(vec![
            name.clone(),
            c.mix.total().to_string(),
            c.shared_requests.to_string(),
            c.shared_wavefronts.to_string(),
            c.bank_conflicts.to_string(),
            c.ldmatrix_conflicts.to_string(),
            c.global_load_requests.to_string(),
            per(c.load_sectors_per_request()),
            c.global_store_requests.to_string(),
            per(c.store_sectors_per_request()),
        ]);
    }
    mem.notes.push(
        "wavefronts: 32 banks of 4 bytes, one phase per 32/16/8 lanes for 4/8/16-byte accesses and per ldmatrix matrix; conflicts = wavefronts - phases".into(),
    );
    mem.notes.push(
        "sectors/req: distinct 32-byte sectors per warp-level request (coalesced 4-byte loads: 4; 16-byte: 16)".into(),
    );
    let mut header = vec!["op"];
    header.extend(Counters::default().mix.entries().map(|e| e.0));
    let mut mix = Table::new(&header);
    mix.right = (1..header.len()).collect();
    mix.title = Some("emu instruction mix (warp instructions)".into());
    for (name, c) in &counted {
        let mut row = vec![name.clone()];
        row.extend(c.mix.entries().map(|e| e.1.to_string()));
        mix.rows.push(row);
    }
    vec![mem, mix]
}
