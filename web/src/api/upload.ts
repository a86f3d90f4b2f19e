// Multipart upload with progress (fetch cannot report upload progress),
// typed by the generated UploadResponse and ErrorBody.
import { ApiFailure, type ErrorBody } from "./client";
import type { UploadResponse } from "./models";

export function uploadVideo(
  file: File,
  onProgress: (fraction: number) => void,
): { done: Promise<UploadResponse>; abort: () => void } {
  const xhr = new XMLHttpRequest();
  const done = new Promise<UploadResponse>((resolve, reject) => {
    xhr.open("POST", "/api/upload");
    xhr.withCredentials = true;
    xhr.responseType = "json";
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve(xhr.response as UploadResponse);
      } else {
        const body = xhr.response as Partial<ErrorBody> | null;
        reject(new ApiFailure(xhr.status, body?.error ?? "http_" + xhr.status, body?.message ?? ""));
      }
    };
    xhr.onerror = () => reject(new ApiFailure(xhr.status || 0, "network", ""));
    xhr.onabort = () => reject(new ApiFailure(0, "aborted", ""));
    const form = new FormData();
    form.append("file", file, file.name);
    xhr.send(form);
  });
  return { done, abort: () => xhr.abort() };
}
