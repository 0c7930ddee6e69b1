use super::*;

fn lay(d: &[Option<usize>]) -> Layout {
    Layout {
        dims: d.to_vec(),
        partial: None,
    }
}

#[test]
fn matmul_rules() {
    // rows of A over axis 0 → rows of the result; B replicated stays replicated.
    let (ta, tb, o) = matmul(
        &[8, 4],
        &lay(&[Some(0), None]),
        &[4, 6],
        &lay(&[None, None]),
        &[8, 6],
    );
    assert_eq!(ta.dims, vec![Some(0), None]);
    assert_eq!(tb.dims, vec![None, None]);
    assert_eq!(o.dims, vec![Some(0), None]);
    assert_eq!(o.partial, None);
    // contraction split on A only: B is sliced to match; the result is partial.
    let (_, tb, o) = matmul(
        &[8, 4],
        &lay(&[None, Some(1)]),
        &[4, 6],
        &lay(&[None, None]),
        &[8, 6],
    );
    assert_eq!(tb.dims, vec![Some(1), None]);
    assert_eq!(o.partial, Some(1));
    // A's rows and B's columns on the same axis: B's columns are gathered.
    let (_, tb, o) = matmul(
        &[8, 4],
        &lay(&[Some(0), None]),
        &[4, 6],
        &lay(&[None, Some(0)]),
        &[8, 6],
    );
    assert_eq!(tb.dims, vec![None, None]);
    assert_eq!(o.dims, vec![Some(0), None]);
}

#[test]
fn shards_cut_as_torch_chunk() {
    // 10 over 4: chunks of 3, the last one 1; 5 over 4: 2, 2, 1, 0; 2 over 3: 1, 1, 0.
    let lens = |n, k| (0..k).map(|i| shard_range(n, k, i)).collect::<Vec<_>>();
    assert_eq!(lens(10, 4), vec![(0, 3), (3, 3), (6, 3), (9, 1)]);
    assert_eq!(lens(5, 4), vec![(0, 2), (2, 2), (4, 1), (5, 0)]);
    assert_eq!(lens(2, 3), vec![(0, 1), (1, 1), (2, 0)]);
    assert_eq!(lens(12, 3), vec![(0, 4), (4, 4), (8, 4)]);
    for n in 0..40 {
        for k in 1..9 {
            let r = lens(n, k);
            assert_eq!(r.iter().map(|x| x.1).sum::<usize>(), n);
            assert!(r.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
        }
    }
    let m = MeshShape {
        axes: vec!["tp".into()],
        shape: vec![6],
    };
    let l = lay(&[Some(0), None]);
    assert_eq!(l.local_shape(&[1_000_000, 8], &m), vec![166_667, 8]);
    assert_eq!(
        l.shard_ranges(&[1_000_000, 8], &m, &[5]),
        vec![(833_335, 166_665), (0, 8)]
    );
    assert!(!l.is_even(&[1_000_000, 8], &m));
}

#[test]
fn reshard_plans() {
    // a split moving from rows to columns over the same axis is one all_to_all.
    let c = reshard(&lay(&[Some(0), None]), &lay(&[None, Some(0)]));
    assert_eq!(
        c,
        vec![Comm {
            kind: CommKind::AllToAll {
                split: 1,
                concat: 0
            },
            axis: 0
        }]
    );
    // dropping a split is an all_gather; adding one needs no communication.
    let c = reshard(&lay(&[Some(0), None]), &lay(&[None, Some(1)]));
    assert_eq!(
        c,
        vec![Comm {
            kind: CommKind::AllGather(0),
            axis: 0
        }]
    );
    // a partial result feeding a consumer split over that axis: reduce_scatter.
    let p = Layout {
        dims: vec![None, None],
        partial: Some(1),
    };
    let c = reshard(&p, &lay(&[Some(1), None]));
    assert_eq!(c[0].kind, CommKind::ReduceScatter(RedOp::Sum, 0));
    let c = reshard(&p, &lay(&[None, None]));
    assert_eq!(c[0].kind, CommKind::AllReduce(RedOp::Sum));
}

#[test]
fn elementwise_broadcast() {
    // [8, 4] split on rows + [4] replicated: the bias stays whole on each device.
    let (t, o) = elementwise(
        &[(&[8, 4], &lay(&[Some(0), None])), (&[4], &lay(&[None]))],
        &[8, 4],
    );
    assert_eq!(o.dims, vec![Some(0), None]);
    assert_eq!(t[1].dims, vec![None]);
    // a replicated operand is sliced to the split of the other.
    let (t, _) = elementwise(
        &[
            (&[8, 4], &lay(&[None, None])),
            (&[8, 4], &lay(&[None, Some(1)])),
        ],
        &[8, 4],
    );
    assert_eq!(t[0].dims, vec![None, Some(1)]);
}

#[test]
fn overlap_finds_independent_kernels() {
    let k = |inputs: Vec<usize>, out: usize| Step::Kernel {
        op: "matmul".into(),
        inputs,
        out,
        in_shapes: vec![],
        out_shape: vec![],
        out_layout: lay(&[]),
        dtype: "fp32".into(),
        flops: 0.0,
        bytes: 0.0,
        measured_us: None,
    };
    let c = |input: usize, out: usize| Step::Collective {
        comm: Comm {
            kind: CommKind::AllReduce(RedOp::Sum),
            axis: 0,
        },
        input,
        out,
        local_shape: vec![],
        dtype: "fp32".into(),
        elem_bytes: 4,
        measured_us: None,
    };
    // chunk 0: kernel → all_reduce; chunk 1's kernel does not need chunk 0's result.
    let steps = vec![
        k(vec![0], 1),
        c(1, 2),
        k(vec![0], 3),
        c(3, 4),
        k(vec![2, 4], 5),
    ];
    let plan = overlap(&steps);
    assert_eq!(plan, vec![(1, vec![2])]);
}
