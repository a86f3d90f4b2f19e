// Reads the float32 data of a CTranslate2 StorageView that ct2rs returned
// (ct2rs exposes no accessor). media::whisper uses it to join encoder outputs
// computed in small sub-batches into the one batch the decoder runs on.
#include <cstddef>
#include <cstring>

#include <ctranslate2/storage_view.h>

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
