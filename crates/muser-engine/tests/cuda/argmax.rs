//! The greedy argmax folded into the LM head's flat kernel (`Cuda::matvec1_flat_q6ks` with a
//! key) against the host's argmax of the same launch's outputs, and the embedding gather's
//! fed token decoded from such a key.

use cudarc::driver::DevicePtr;
use muser_engine::cuda::{address_words, argmax_of_key, Cuda, Q8Act, Seg};
use muser_gguf::GgmlType;

use super::{weights, Rng};

/// Q6_K block bytes and the offset of its f16 scale `d`.
const Q6K_BLOCK: usize = 210;
const Q6K_D: usize = 208;

/// One flat-kernel launch with the key folded in: the outputs and the decoded key.
fn flat_with_key(
    cuda: &Cuda,
    w: &[u8],
    n_out: usize,
    n_in: usize,
    x: &[f32],
) -> Option<(Vec<f32>, u32)> {
    let stream = cuda.stream();
    let wd = stream.clone_htod(w).unwrap();
    let w4 = cuda.q6k_split_from(&wd.as_view(), n_out, n_in, 4).unwrap();
    let xd = stream.clone_htod(x).unwrap();
    let mut act = Q8Act::new(cuda, n_in).unwrap();
    cuda.quantize_into(&xd.as_view(), &mut act, n_in).unwrap();
    let mut yd = stream.alloc_zeros::<f32>(n_out).unwrap();
    // A key left over from another step, which the launch must not keep: cleared first, as
    // `greedy_fed` clears its run's keys.
    let kd = stream.clone_htod(&[0u64]).unwrap();
    let ka = kd.device_ptr(stream).0;
    let kw = stream.clone_htod(&address_words(ka)).unwrap();
    let kwa = kw.device_ptr(stream).0;
    let mut seg = Seg {
        ty: GgmlType::Q6_K,
        split: Some(4),
        w: w4.as_view(),
        y: yd.as_view_mut(),
        n_out,
    };
    // SAFETY: `kw` holds the address of `kd`, a live u64, for the launch.
    let ran =
        unsafe { cuda.matvec1_flat_q6ks(&mut seg, &act, n_in, Some((0.5, 30.0)), kwa) }.unwrap();
    ran?;
    let y = stream.clone_dtoh(&yd).unwrap();
    let key = stream.clone_dtoh(&kd).unwrap()[0];
    Some((y, argmax_of_key(key)))
}

/// Random LM heads (several shapes, a last warp with fewer than 16 rows), and rows that are
/// all copies of one with row 2's scales NaN (its output NaN, never chosen; the others tie,
/// the lowest index wins): the folded argmax equals `sampling::argmax` of the launch's own
/// outputs. (Not with a NaN at index 0, which `sampling::argmax` keeps and the device's
/// argmax, `argmax_f32_grid` as the fold, never chooses.)
pub fn folded_argmax_parity(cuda: &Cuda) -> (usize, usize) {
    let (mut pass, mut fail) = (0, 0);
    for (case, (n_out, n_in)) in [(64usize, 1024usize), (1000, 2048), (4099, 6656), (70, 1024)]
        .into_iter()
        .enumerate()
    {
        let seed = 0xa7f0_0000 ^ case as u64;
        let mut rng = Rng(seed | 1);
        let (mut w, _) = weights(GgmlType::Q6_K, n_in, n_out, &mut rng);
        let x: Vec<f32> = (0..n_in).map(|_| rng.f()).collect();
        let ties = case == 3;
        if ties {
            let rb = w.len() / n_out;
            let row0 = w[..rb].to_vec();
            for r in w.chunks_mut(rb) {
                r.copy_from_slice(&row0);
            }
            for b in w[2 * rb..3 * rb].chunks_mut(Q6K_BLOCK) {
                b[Q6K_D..Q6K_D + 2].copy_from_slice(&0x7e00u16.to_le_bytes());
            }
        }
        let Some((y, got)) = flat_with_key(cuda, &w, n_out, n_in, &x) else {
            fail += 1;
            println!(
                "FAIL folded argmax n_out={n_out} n_in={n_in}: the flat kernel does not apply"
            );
            continue;
        };
        let want = muser_engine::sampling::argmax(&y) as u32;
        let shape_ok = !ties || (y[2].is_nan() && want == 0);
        if got == want && shape_ok {
            pass += 1;
        } else {
            fail += 1;
            println!("FAIL folded argmax n_out={n_out} n_in={n_in} seed={seed:#x}: key {got}, host {want} (ties case {ties}: row 2 {})", y[2]);
        }
    }
    println!("folded argmax (flat LM head kernel vs sampling::argmax): {pass} pass, {fail} fail");
    (pass, fail)
}
