// C++ support for media::ct2_backend, beside what ct2rs offers.
#include <cpuid.h>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include <ctranslate2/storage_view.h>

// CTranslate2 reads its CPU switches once from the environment, and its
// "use MKL on Intel CPUs" default depends on a static (the CPU vendor) that
// other static initialisers can reach before it is set: with this file linked
// in, the choice was made first and came out "not Intel", silently leaving
// oneDNN on. This runs before every default-priority static initialiser and
// states both switches explicitly (an operator's own values win):
// - CT2_USE_MKL=1 on Intel CPUs (CTranslate2's own rule, as in
//   faster-whisper's wheels);
// - CT2_FORCE_CPU_ISA=AVX512 where the CPU has the AVX-512 subsets
//   CTranslate2 checks: its own kernels (softmax, layer norm, activations,
//   quantization) otherwise run with AVX2, and AVX-512 was 3-5 % faster in
//   A/B runs on a 146 s talk.
__attribute__((constructor(101))) static void clipforge_configure_ctranslate2() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) {
    char vendor[13];
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    vendor[12] = '\0';
    if (std::strcmp(vendor, "GenuineIntel") == 0)
      setenv("CT2_USE_MKL", "1", /*overwrite=*/0);
  }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd")
      && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")
      && __builtin_cpu_supports("avx512bw"))
    setenv("CT2_FORCE_CPU_ISA", "AVX512", /*overwrite=*/0);
}

// Copies the float32 data of a CTranslate2 StorageView that ct2rs returned
// (ct2rs exposes no accessor). media::whisper uses it to join encoder outputs
// computed in small sub-batches into the one batch the decoder runs on.
extern "C" int clipforge_ct2_copy_f32(const void* view, float* dst, std::size_t capacity) {
  try {
    const auto* storage = static_cast<const ctranslate2::StorageView*>(view);
    if (storage->dtype() != ctranslate2::DataType::FLOAT32
        || storage->device() != ctranslate2::Device::CPU)
      return -1;
    const auto size = static_cast<std::size_t>(storage->size());
    if (size > capacity)
      return -2;
    std::memcpy(dst, storage->data<float>(), size * sizeof(float));
    return 0;
  } catch (...) {
    return -3;
  }
}
