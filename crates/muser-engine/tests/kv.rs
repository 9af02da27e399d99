//! KV cache: ring wrap-around with explicit origins, truncation across a wrap, refusals.

use muser_engine::{Error, GlimmerConfig, KvCache, KvDtype, RingMeta};

fn cfg(window: usize) -> GlimmerConfig {
    GlimmerConfig {
        n_layer: 2,
        n_embd: 8,
        n_ff: 8,
        n_head: 2,
        n_head_kv: 1,
        head_dim: 4,
        n_vocab: 10,
        context_length: 1000,
        rms_eps: 1e-5,
        post_norm_eps: 1e-8,
        rope_freq_base: 10000.0,
        rope_freq_base_swa: 10000.0,
        sliding_window: window,
        sliding: vec![true, false],
        logit_scale: 1.0,
        softcap: 0.0,
    }
}

/// A row whose values encode the position, so reads can be checked.
fn row(pos: usize) -> Vec<f32> {
    (0..4).map(|i| pos as f32 + i as f32 * 0.25).collect()
}

fn fill(kv: &mut KvCache, from: usize, to: usize) {
    for p in from..to {
        for layer in 0..2 {
            kv.append(layer, p, &row(p), &row(p + 100)).unwrap();
        }
    }
}

fn check_window(kv: &KvCache, pos: usize) {
    for layer in 0..2 {
        for p in kv.visible(layer, pos) {
            let (k, v) = kv.row(layer, p);
            let mut buf = [0f32; 4];
            k.to_f32(&mut buf);
            assert_eq!(buf.to_vec(), row(p), "layer {layer} K of {p}");
            v.to_f32(&mut buf);
            assert_eq!(buf.to_vec(), row(p + 100), "layer {layer} V of {p}");
        }
    }
}

#[test]
fn ring_wraps_with_explicit_origins() {
    for dtype in [KvDtype::F32, KvDtype::F16] {
        let mut kv = KvCache::new(&cfg(4), dtype, 100, 2);
        fill(&mut kv, 0, 3);
        let m = kv.ring(0).unwrap();
        assert_eq!((m.origin_logical, m.origin_physical, m.len), (0, 0, 3));
        assert_eq!(kv.visible(0, 2), 0..3);
        fill(&mut kv, 3, 13);
        // The window of the newest position (12) is 9..=12: origin at 9, slot 9 mod 6.
        let m = kv.ring(0).unwrap();
        assert_eq!(m.capacity, 6);
        assert_eq!(m.len, 4);
        assert_eq!(m.origin_logical, 9);
        assert_eq!(m.origin_physical, 9 % 6);
        assert_eq!(kv.visible(0, 12), 9..13);
        assert_eq!(kv.visible(1, 12), 0..13);
        check_window(&kv, 12);
        assert!(kv.ring(1).is_none());
    }
}

#[test]
fn appends_must_be_contiguous() {
    let mut kv = KvCache::new(&cfg(4), KvDtype::F32, 10, 0);
    fill(&mut kv, 0, 2);
    match kv.append(0, 3, &row(3), &row(3)) {
        Err(Error::CacheDiscontinuity {
            layer: 0,
            expected: 2,
            got: 3,
        }) => {}
        other => panic!("{other:?}"),
    }
    assert!(kv.append(0, 1, &row(1), &row(1)).is_err());
    // Nothing changed.
    assert_eq!(kv.len(), 2);
    fill(&mut kv, 2, 10);
    assert!(matches!(
        kv.append(0, 10, &row(10), &row(10)),
        Err(Error::CacheFull { .. })
    ));
    assert!(kv.append(0, 10, &row(1)[..3], &row(1)).is_err());
}

#[test]
fn truncation_across_a_wrap_restores_metadata_exactly() {
    let (window, slack) = (4, 3);
    // Reference: metadata of a cache built straight to each length.
    let reference_with = |n: usize, slack: usize| -> RingMeta {
        let mut kv = KvCache::new(&cfg(window), KvDtype::F32, 100, slack);
        fill(&mut kv, 0, n);
        kv.ring(0).unwrap()
    };
    let reference = |n: usize| reference_with(n, slack);
    let mut kv = KvCache::new(&cfg(window), KvDtype::F32, 100, slack);
    fill(&mut kv, 0, 20);
    // 20 -> 17 crosses the physical wrap (capacity 7): slots 6, 0, 1 are dropped.
    kv.truncate(17).unwrap();
    assert_eq!(kv.len(), 17);
    assert_eq!(kv.ring(0).unwrap(), reference(17));
    check_window(&kv, 16);
    // Re-appending gives what a straight build gives.
    fill(&mut kv, 17, 23);
    assert_eq!(kv.ring(0).unwrap(), reference(23));
    check_window(&kv, 22);
    // Further back than the slack allows: refused, and nothing changes.
    let before = kv.ring(0).unwrap();
    match kv.truncate(19) {
        Err(Error::TruncateTooFar {
            layer: 0, to: 19, ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(kv.ring(0).unwrap(), before);
    assert_eq!(kv.len(), 23);
    assert!(matches!(
        kv.truncate(24),
        Err(Error::TruncateBeyondEnd { .. })
    ));
    // Before any wrap, any truncation works.
    let mut kv = KvCache::new(&cfg(window), KvDtype::F32, 100, 0);
    fill(&mut kv, 0, 4);
    kv.truncate(1).unwrap();
    assert_eq!(kv.ring(0).unwrap(), reference_with(1, 0));
    kv.truncate(0).unwrap();
    assert!(kv.is_empty());
}

#[test]
fn f16_storage_rounds_and_reports_bytes() {
    let c = cfg(4);
    let mut kv = KvCache::new(&c, KvDtype::F16, 100, 0);
    kv.append(0, 0, &[1.0 / 3.0; 4], &[0.1; 4]).unwrap();
    let (k, _) = kv.row(0, 0);
    assert_eq!(k.get(0), half::f16::from_f32(1.0 / 3.0).to_f32());
    // Ring: 4 rows x 4 values x 2 (K, V) x 2 bytes; the plane grows on demand.
    assert_eq!(kv.bytes(), 4 * 4 * 2 * 2);
}
