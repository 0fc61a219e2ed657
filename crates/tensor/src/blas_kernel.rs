//! Choosing OpenBLAS's compute kernel for this CPU, and keeping its idle worker threads off the
//! CPU.
//!
//! Debian's OpenBLAS 0.3.21 does not recognise some recent CPUs and falls back to its oldest
//! x86-64 kernels ("Prescott"), which multiply matrices about four times slower than the CPU
//! allows. OpenBLAS reads the `OPENBLAS_CORETYPE` variable once, when the library is loaded, before
//! `main` runs; so the only way to choose the kernel from inside the program is to set the variable
//! and re-execute the program. [`ensure_tuned_kernel`] does that, once, first thing in the CLI's
//! `main`, and only when the kernel OpenBLAS chose is worse than the one the CPU supports.

use std::ffi::{CStr, OsString, c_char};

/// The variable OpenBLAS reads to choose its kernel.
const CORETYPE_VARIABLE: &str = "OPENBLAS_CORETYPE";

/// Set in the re-executed process (and settable by users) to stop any re-execution.
const NO_REEXEC_VARIABLE: &str = "NABLA_NO_REEXEC";

/// The CPU features that decide which OpenBLAS kernel runs best.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuFeatures {
    pub avx2: bool,
    pub fma: bool,
    pub avx512f: bool,
    pub avx512bw: bool,
    pub avx512cd: bool,
    pub avx512dq: bool,
    pub avx512vl: bool,
}

impl CpuFeatures {
    /// The features of the CPU this process runs on, as the operating system enables them (none
    /// off x86-64).
    pub fn detect() -> CpuFeatures {
        #[cfg(target_arch = "x86_64")]
        {
            CpuFeatures {
                avx2: std::arch::is_x86_feature_detected!("avx2"),
                fma: std::arch::is_x86_feature_detected!("fma"),
                avx512f: std::arch::is_x86_feature_detected!("avx512f"),
                avx512bw: std::arch::is_x86_feature_detected!("avx512bw"),
                avx512cd: std::arch::is_x86_feature_detected!("avx512cd"),
                avx512dq: std::arch::is_x86_feature_detected!("avx512dq"),
                avx512vl: std::arch::is_x86_feature_detected!("avx512vl"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            CpuFeatures::default()
        }
    }
}

/// The OpenBLAS core type whose kernels suit `features`: `SkylakeX` with the AVX-512 subsets
/// its kernels use, `Haswell` with AVX2 and FMA, otherwise none (leave OpenBLAS's own choice).
pub fn choose_coretype(features: CpuFeatures) -> Option<&'static str> {
    let avx512 = features.avx512f
        && features.avx512bw
        && features.avx512cd
        && features.avx512dq
        && features.avx512vl;
    if avx512 && features.avx2 && features.fma {
        Some("SkylakeX")
    } else if features.avx2 && features.fma {
        Some("Haswell")
    } else {
        None
    }
}

/// Whether OpenBLAS's own choice `current` (its core name) is worse than `wanted`, the choice of
/// [`choose_coretype`]: true unless `current` is a kernel with at least `wanted`'s instruction set.
pub fn needs_retuning(current: &str, wanted: &str) -> bool {
    // Kernels of OpenBLAS 0.3.21 that use AVX-512, and those that use at least AVX2 and FMA.
    const AVX512_KERNELS: [&str; 3] = ["SkylakeX", "Cooperlake", "SapphireRapids"];
    const AVX2_KERNELS: [&str; 2] = ["Haswell", "Zen"];
    let good_enough = |name: &str| current.eq_ignore_ascii_case(name);
    match wanted {
        "SkylakeX" => !AVX512_KERNELS.into_iter().any(good_enough),
        _ => !AVX512_KERNELS.into_iter().chain(AVX2_KERNELS).any(good_enough),
    }
}

/// Re-executes the current program with `OPENBLAS_CORETYPE` set to the kernel this CPU needs, when
/// the kernel OpenBLAS detected by itself is worse; nothing happens if the user set
/// `OPENBLAS_CORETYPE` or `NABLA_NO_REEXEC`. The re-executed process has `NABLA_NO_REEXEC=1`, so
/// this happens at most once. On any failure the program simply continues with OpenBLAS's own
/// choice. Call it first thing in `main`, before any thread starts or any input is read.
pub fn ensure_tuned_kernel() {
    if std::env::var_os(CORETYPE_VARIABLE).is_some()
        || std::env::var_os(NO_REEXEC_VARIABLE).is_some()
    {
        return;
    }
    let Some(wanted) = choose_coretype(CpuFeatures::detect()) else {
        return;
    };
    if needs_retuning(&openblas_core_name(), wanted) {
        reexec_with(wanted);
    }
}

unsafe extern "C" {
    /// OpenBLAS's name for the kernel set it loaded, such as `Haswell` or `Prescott`.
    fn openblas_get_corename() -> *mut c_char;
}

/// The name of the kernel set OpenBLAS chose, or an empty string if it gives none.
pub fn openblas_core_name() -> String {
    // SAFETY: `openblas_get_corename` takes no arguments and returns either null or a pointer to
    // a static NUL-terminated string owned by OpenBLAS, which is only read here.
    let name = unsafe { openblas_get_corename() };
    if name.is_null() {
        return String::new();
    }
    // SAFETY: `name` is non-null and points to OpenBLAS's static NUL-terminated string.
    unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

/// The OpenBLAS function that stops its worker threads (see [`stop_idle_blas_threads`]).
const SHUTDOWN_SYMBOL: &CStr = c"blas_thread_shutdown_";

/// Stops OpenBLAS's worker threads until a BLAS call wants them again.
///
/// A threaded OpenBLAS starts its workers when it is loaded, and a worker with no work spins on
/// `sched_yield` for about 2^28 cycles (a tenth of a second) before it sleeps; it does the same
/// after every threaded call. A program whose first tenth of a second is interpreted scalar code
/// (most short programs, and every autodiff loop) would share the machine with that spinning:
/// measured on a two-core machine, the forward-only benchmark loop ran in 25 ms without it and in
/// 36 ms with it. Stopped, the workers are started again by OpenBLAS itself on its next threaded
/// call (`exec_blas` re-initialises a stopped server, as it does in the child of a `fork`), so
/// large products still use every core.
///
/// The function is looked up by name, so that an OpenBLAS built without threads (or another
/// BLAS), which has none, is simply left alone. Call it first thing in `main`, before any other
/// thread can make a BLAS call.
pub fn stop_idle_blas_threads() {
    #[cfg(unix)]
    {
        // SAFETY: `dlsym` with the default handle and a NUL-terminated name only reads.
        let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, SHUTDOWN_SYMBOL.as_ptr()) };
        if symbol.is_null() {
            return;
        }
        // SAFETY: in every OpenBLAS that exports it, `blas_thread_shutdown_` is
        // `int blas_thread_shutdown_(void)`; it joins the idle workers under OpenBLAS's own lock
        // and returns 0. No BLAS call runs concurrently: the caller runs before any other thread.
        let shutdown: unsafe extern "C" fn() -> libc::c_int =
            unsafe { std::mem::transmute(symbol) };
        // SAFETY: see above.
        unsafe { shutdown() };
    }
}

#[cfg(unix)]
fn reexec_with(coretype: &str) {
    use std::os::unix::process::CommandExt;

    let Ok(executable) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let program_name = args.next().unwrap_or_else(|| OsString::from(&executable));
    // `exec` only returns on failure, and then the program goes on untuned.
    let _failure = std::process::Command::new(&executable)
        .arg0(program_name)
        .args(args)
        .env(CORETYPE_VARIABLE, coretype)
        .env(NO_REEXEC_VARIABLE, "1")
        .exec();
}

#[cfg(not(unix))]
fn reexec_with(_coretype: &str) {}

#[cfg(test)]
mod tests {
    use super::*;

    const AVX2_FMA: CpuFeatures = CpuFeatures {
        avx2: true,
        fma: true,
        avx512f: false,
        avx512bw: false,
        avx512cd: false,
        avx512dq: false,
        avx512vl: false,
    };

    const AVX512: CpuFeatures = CpuFeatures {
        avx512f: true,
        avx512bw: true,
        avx512cd: true,
        avx512dq: true,
        avx512vl: true,
        ..AVX2_FMA
    };

    #[test]
    fn avx512_cpus_get_skylake_x_kernels() {
        assert_eq!(choose_coretype(AVX512), Some("SkylakeX"));
    }

    #[test]
    fn avx2_cpus_get_haswell_kernels() {
        assert_eq!(choose_coretype(AVX2_FMA), Some("Haswell"));
        // AVX-512 without the subsets the SkylakeX kernels use is not enough for them.
        assert_eq!(choose_coretype(CpuFeatures { avx512f: true, ..AVX2_FMA }), Some("Haswell"));
    }

    #[test]
    fn only_kernels_weaker_than_the_cpu_are_retuned() {
        assert!(needs_retuning("Prescott", "SkylakeX"));
        assert!(needs_retuning("Haswell", "SkylakeX"));
        assert!(!needs_retuning("SkylakeX", "SkylakeX"));
        assert!(!needs_retuning("Cooperlake", "SkylakeX"));
        assert!(needs_retuning("Prescott", "Haswell"));
        assert!(needs_retuning("Sandybridge", "Haswell"));
        assert!(!needs_retuning("Zen", "Haswell"));
        assert!(!needs_retuning("haswell", "Haswell"));
        assert!(needs_retuning("", "Haswell"));
    }

    #[test]
    fn openblas_names_its_kernel() {
        assert!(!openblas_core_name().is_empty());
    }

    #[test]
    fn older_cpus_keep_the_default() {
        assert_eq!(choose_coretype(CpuFeatures::default()), None);
        assert_eq!(choose_coretype(CpuFeatures { avx2: true, ..CpuFeatures::default() }), None);
        assert_eq!(choose_coretype(CpuFeatures { fma: false, ..AVX512 }), None);
    }
}
