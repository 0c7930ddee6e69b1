use super::*;
use std::sync::Arc;

#[test]
fn balanced_shapes_match_an_exhaustive_search() {
    assert_eq!(balanced_shape(72, 3), vec![6, 4, 3]);
    assert_eq!(balanced_shape(8, 2), vec![4, 2]);
    assert_eq!(balanced_shape(7, 2), vec![7, 1]);
    assert_eq!(balanced_shape(5, 1), vec![5]);
    assert!(balanced_shape(5, 0).is_empty());
    // every non-increasing factorisation, the smallest in lexicographic order
    fn all(n: usize, k: usize, max: usize, out: &mut Vec<Vec<usize>>, cur: &mut Vec<usize>) {
        if k == 0 {
            if n == 1 {
                out.push(cur.clone());
            }
            return;
        }
        for f in 1..=max.min(n) {
            if n.is_multiple_of(f) {
                cur.push(f);
                all(n / f, k - 1, f, out, cur);
                cur.pop();
            }
        }
    }
    for n in 1..=200 {
        for k in 1..=4 {
            let mut v = vec![];
            all(n, k, n, &mut v, &mut vec![]);
            let best = v.into_iter().min().unwrap();
            assert_eq!(balanced_shape(n, k), best, "{n} over {k}");
        }
    }
}

fn mesh(axes: &[&str], shape: &[usize]) -> Arc<Mesh> {
    Arc::new(
        Mesh::new(
            axes.iter().map(|s| s.to_string()).collect(),
            shape.to_vec(),
            None,
        )
        .unwrap(),
    )
}

#[test]
fn mesh_errors_name_numbers() {
    let e = Mesh::new(vec!["tp".into()], vec![4], Some(vec![0, 1, 2])).unwrap_err();
    assert_eq!(e.code, Code::E0400);
    assert!(e.message.contains("4 positions") && e.message.contains("3 devices"));
    let m = mesh(&["tp"], &[4]);
    let e = m.axis("dp").unwrap_err();
    assert!(e.message.contains("'dp'") && e.message.contains("'tp'"));
    let e = Sharded::split(
        &Tensor::rand(&[6, 4], DType::F32, 0).unwrap(),
        Layout {
            dims: vec![Some(0), Some(0)],
            partial: None,
        },
        m,
    )
    .unwrap_err();
    assert!(
        e.message.contains("'tp' splits two dimensions"),
        "{}",
        e.message
    );
}

#[test]
fn split_and_gather_round_trip() {
    let m = mesh(&["a", "b"], &[2, 3]);
    let t = Tensor::rand(&[6, 4], DType::F32, 1).unwrap();
    let l = Layout {
        dims: vec![Some(1), Some(0)],
        partial: None,
    };
    let s = Sharded::split(&t, l, m.clone()).unwrap();
    assert_eq!(s.shards[0].shape(), &[2, 2]);
    // rank 1 is (a=0, b=1): rows 2..4, columns 0..2.
    let want = t
        .index(&[
            IndexItem::Slice {
                start: Some(2),
                stop: Some(4),
                step: None,
            },
            IndexItem::Slice {
                start: Some(0),
                stop: Some(2),
                step: None,
            },
        ])
        .unwrap();
    assert_eq!(
        s.shards[1].to_f32_vec().unwrap(),
        want.to_f32_vec().unwrap()
    );
    let g = s.gather(&Local).unwrap();
    assert_eq!(g.to_f32_vec().unwrap(), t.to_f32_vec().unwrap());
}

#[test]
fn uneven_shards_round_trip() {
    // 7 rows over 3 devices: 3, 3, 1; 5 columns over 4 (a 3 x 4 mesh below): 2, 2, 1, 0.
    let m = mesh(&["a", "b"], &[3, 4]);
    let t = Tensor::rand(&[7, 5], DType::F32, 3).unwrap();
    let l = Layout {
        dims: vec![Some(0), Some(1)],
        partial: None,
    };
    let s = Sharded::split(&t, l, m.clone()).unwrap();
    assert_eq!(s.local_shape(), vec![3, 2]);
    assert_eq!(s.shards[m.rank(&[2, 2])].shape(), &[1, 1]);
    assert_eq!(s.shards[m.rank(&[1, 3])].shape(), &[3, 0]);
    let g = s.gather(&Local).unwrap();
    assert_eq!(g.to_f32_vec().unwrap(), t.to_f32_vec().unwrap());
    // the same cut through a replicated tensor sliced locally, and through collectives
    let r = Sharded::split(&t, Layout::replicated(2), m.clone()).unwrap();
    let sl = r.slice_to(&s.layout).unwrap();
    for i in 0..m.size() {
        assert_eq!(sl.shards[i].shape(), s.shards[i].shape());
    }
    let rows = Sharded::split(
        &t,
        Layout {
            dims: vec![Some(0), None],
            partial: None,
        },
        m.clone(),
    )
    .unwrap();
    let moved = rows
        .apply(
            Comm {
                kind: CommKind::AllToAll {
                    split: 1,
                    concat: 0,
                },
                axis: 0,
            },
            &Local,
        )
        .unwrap();
    assert_eq!(moved.shards[0].shape(), &[7, 2]);
    assert_eq!(moved.shards[m.rank(&[2, 0])].shape(), &[7, 1]);
    assert_eq!(
        moved.gather(&Local).unwrap().to_f32_vec().unwrap(),
        t.to_f32_vec().unwrap()
    );
    let rs = Local
        .reduce_scatter(&[t.clone(), t.clone()], RedOp::Sum, 1)
        .unwrap();
    assert_eq!(rs[0].shape(), &[7, 3]);
    assert_eq!(rs[1].shape(), &[7, 2]);
}

#[test]
fn collectives_fixed_order() {
    let xs: Vec<Tensor> = (0..4)
        .map(|i| Tensor::from_f32(&[2, 4], vec![0.1 * i as f32 + 1e7; 8], DType::F32).unwrap())
        .collect();
    let r = Local.all_reduce(&xs, RedOp::Sum).unwrap();
    // fixed order: ((x0 + x1) + x2) + x3 in f32.
    let want = ((xs[0].to_f32_vec().unwrap()[0] + xs[1].to_f32_vec().unwrap()[0])
        + xs[2].to_f32_vec().unwrap()[0])
        + xs[3].to_f32_vec().unwrap()[0];
    assert_eq!(r[3].to_f32_vec().unwrap()[0], want);
    let rs = Local.reduce_scatter(&xs, RedOp::Sum, 1).unwrap();
    assert_eq!(rs[2].shape(), &[2, 1]);
    let g = Local.all_gather(&xs, 0).unwrap();
    assert_eq!(g[0].shape(), &[8, 4]);
    // all_to_all of rows → columns: member j gets column block j of every member's rows.
    let t = Tensor::arange(16, DType::I64)
        .unwrap()
        .reshape(&[4, 4])
        .unwrap();
    let m = mesh(&["x"], &[2]);
    let s = Sharded::split(
        &t,
        Layout {
            dims: vec![Some(0), None],
            partial: None,
        },
        m,
    )
    .unwrap();
    let c = Comm {
        kind: CommKind::AllToAll {
            split: 1,
            concat: 0,
        },
        axis: 0,
    };
    let moved = s.apply(c, &Local).unwrap();
    assert_eq!(moved.layout.dims, vec![None, Some(0)]);
    assert_eq!(
        moved.shards[1].to_i64_vec().unwrap(),
        vec![2, 3, 6, 7, 10, 11, 14, 15]
    );
    assert_eq!(
        moved.gather(&Local).unwrap().to_i64_vec().unwrap(),
        (0..16).collect::<Vec<_>>()
    );
}

#[test]
fn abstract_allocates_nothing() {
    let m = mesh(&["tp", "pp", "dp"], &[8, 3, 3]);
    let l = Layout {
        dims: vec![None, Some(0)],
        partial: None,
    };
    let s = Sharded::abstract_of(&[1_000_000, 1_000_000], DType::BF16, l, m).unwrap();
    assert!(s.is_abstract());
    assert_eq!(s.local_shape(), vec![1_000_000, 125_000]);
    assert_eq!(s.shards.len(), 72);
}

#[test]
fn per_device_is_in_rank_order() {
    let r = per_device(8, false, |i| Ok(i * 10)).unwrap();
    assert_eq!(r, (0..8).map(|i| i * 10).collect::<Vec<_>>());
}

#[test]
fn abstract_shards_follow_the_layout_on_any_mesh_size() {
    // uneven splits (full, smaller and empty shards) over two axes: every rank's abstract
    // shard has the length of its slice, as a concrete split gives it
    let m = mesh(&["a", "b"], &[3, 4]);
    let l = Layout {
        dims: vec![Some(0), Some(1)],
        partial: None,
    };
    let s = Sharded::abstract_of(&[7, 5], DType::F32, l.clone(), m.clone()).unwrap();
    let t = Sharded::split(&Tensor::zeros(&[7, 5], DType::F32).unwrap(), l, m).unwrap();
    for r in 0..12 {
        assert_eq!(s.shards[r].shape(), t.shards[r].shape(), "rank {r}");
    }
    // a mesh of 10^7 devices keeps no per-device state for an abstract tensor
    let big = Arc::new(Mesh::new(vec!["a".into()], vec![10_000_000], None).unwrap());
    let l = Layout {
        dims: vec![Some(0)],
        partial: None,
    };
    let s = Sharded::abstract_of(&[10_000_003], DType::F32, l.clone(), big.clone()).unwrap();
    assert_eq!(s.shards.len(), 10_000_000);
    assert_eq!(s.shards[0].shape(), &[2]);
    assert_eq!(s.shards[5_000_001].shape(), &[1]);
    assert_eq!(s.shards[9_999_999].shape(), &[0]);
    // data over it is refused up front
    let e = Sharded::split(&Tensor::zeros(&[10], DType::F32).unwrap(), l, big).unwrap_err();
    assert!(e.to_string().contains("too large to hold data"), "{e}");
}
