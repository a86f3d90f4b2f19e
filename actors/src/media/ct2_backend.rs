//! How CTranslate2 is run on this machine, beside what `ct2rs` offers: the
//! oneMKL layers, and reading a StorageView's data. `ct2_support.cc` also
//! sets CTranslate2's MKL and CPU-ISA switches before static initialisation.
//! See docs/internals/pipeline.md, "Backend".

use anyhow::{bail, Result};
use ct2rs::sys::StorageView;

/// oneMKL, linked as its single dynamic library `libmkl_rt`, is told which
/// layers to load before its first call: the ILP64 interface CTranslate2 is
/// compiled for (`MKL_ILP64`) and the GNU OpenMP threading layer that matches
/// CTranslate2's and oneDNN's OpenMP runtime. Without this, libmkl_rt would
/// default to LP64 + Intel OpenMP.
pub(crate) fn select_mkl_layers() {
    use std::sync::Once;
    extern "C" {
        fn MKL_Set_Interface_Layer(code: i32) -> i32;
        fn MKL_Set_Threading_Layer(code: i32) -> i32;
    }
    const MKL_INTERFACE_ILP64: i32 = 1;
    const MKL_THREADING_GNU: i32 = 3;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: plain C calls with integer codes, made once, before any
        // other MKL function (models are loaded only through
        // `WhisperModel::load`, which calls this first).
        let (interface, threading) = unsafe {
            (
                MKL_Set_Interface_Layer(MKL_INTERFACE_ILP64),
                MKL_Set_Threading_Layer(MKL_THREADING_GNU),
            )
        };
        if interface != MKL_INTERFACE_ILP64 || threading != MKL_THREADING_GNU {
            tracing::warn!(
                interface,
                threading,
                "oneMKL kept other layers than requested"
            );
        }
    });
}

extern "C" {
    /// `src/media/ct2_support.cc`: copies a CPU float32 StorageView's data.
    fn clipforge_ct2_copy_f32(view: *const std::ffi::c_void, dst: *mut f32, capacity: usize)
        -> i32;
}

/// Copies the float32 data of a CTranslate2 storage into `dst` (exactly its
/// size).
pub(crate) fn copy_f32(view: &StorageView<'_>, dst: &mut [f32]) -> Result<()> {
    // `StorageView` derefs to the C++ `ctranslate2::StorageView` it owns.
    let storage: *const _ = &**view;
    // SAFETY: `storage` points to a live ctranslate2::StorageView for this
    // call; the C++ side checks type, device and that its size fits `dst`.
    let rc = unsafe { clipforge_ct2_copy_f32(storage.cast(), dst.as_mut_ptr(), dst.len()) };
    if rc != 0 {
        bail!("cannot read the encoder output (code {rc})");
    }
    Ok(())
}
