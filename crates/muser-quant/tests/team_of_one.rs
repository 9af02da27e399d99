//! A team of one runs its products on the calling thread: with rayon's only worker held busy,
//! products on a one-member `SpinPool` still finish (they used to be handed to rayon's pool).
//! One test per binary: it configures rayon's global pool.

use std::sync::mpsc;
use std::time::Duration;

use muser_quant::{
    matmul_batch_on, matmul_multi_on, GgmlType, Isa, Kernels, MatmulJob, MatvecJob, SpinPool,
    Threads,
};

#[test]
fn a_team_of_one_does_not_wait_for_rayon() {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global()
        .unwrap();
    let (release, held) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel();
    rayon::spawn(move || {
        started_tx.send(()).unwrap();
        let _ = held.recv();
    });
    started.recv_timeout(Duration::from_secs(60)).unwrap();

    let (done_tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let pool = SpinPool::new(1).unwrap();
        let k = Kernels::new(GgmlType::F32, Isa::Scalar).unwrap();
        // Large enough for the parallel paths (64 KiB of weights per token or more).
        let (n_in, n_out, n_tok) = (256, 128, 4);
        let w: Vec<u8> = (0..n_in * n_out)
            .flat_map(|i| ((i % 7) as f32 * 0.25).to_le_bytes())
            .collect();
        let x: Vec<f32> = (0..n_in * n_tok).map(|i| (i % 5) as f32).collect();
        let mut out = vec![0f32; n_out * n_tok];
        let mut jobs = [MatmulJob {
            kernels: &k,
            w: &w,
            n_out,
            out: &mut out,
        }];
        matmul_batch_on(Threads::Team(&pool), &mut jobs, &x, n_tok).unwrap();
        let mut one = vec![0f32; n_out];
        let mut jobs = [MatvecJob {
            kernels: &k,
            w: &w,
            out: &mut one,
        }];
        matmul_multi_on(&pool, &mut jobs, &x[..n_in]).unwrap();
        done_tx
            .send(out[..n_out] == one[..] && one.iter().any(|&v| v != 0.0))
            .unwrap();
    });
    let result = done.recv_timeout(Duration::from_secs(60));
    release.send(()).unwrap();
    assert_eq!(
        result,
        Ok(true),
        "products on a team of one did not finish while rayon's worker was busy (or differ)"
    );
}
