//! Compiles the CUDA kernels with NVRTC for a given architecture without a GPU (a syntax and
//! type check of the `.cu` sources): `cargo run -p muser-engine --example cuda_compile_check --
//! 90 [DIR]`; with DIR, each module's PTX is written there (`ptxas -v` then shows registers).

fn main() {
    let arch: i32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(90);
    let dir = std::env::args().nth(2);
    match muser_engine::cuda::compile_all((arch / 10, arch % 10)) {
        Ok(mods) => {
            let n: usize = mods.iter().map(|(_, p)| p.len()).sum();
            println!("compiled for sm_{arch}: {n} bytes of PTX");
            if let Some(dir) = dir {
                for (tag, ptx) in &mods {
                    let path = std::path::Path::new(&dir).join(format!("{tag}.ptx"));
                    if let Err(e) = std::fs::write(&path, ptx) {
                        eprintln!("error: writing {}: {e}", path.display());
                        std::process::exit(1);
                    }
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
