//! Compiles the CUDA kernels with NVRTC for a given architecture without a GPU (a syntax and
//! type check of the `.cu` sources): `cargo run -p muser-engine --example cuda_compile_check -- 90`.

fn main() {
    let arch: i32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(90);
    match muser_engine::cuda::compile_check((arch / 10, arch % 10)) {
        Ok(n) => println!("compiled for sm_{arch}: {n} bytes of PTX"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
