//! The project ZIP: clips, thumbnails, subtitles, `clips.json` and the three
//! timelines, written to an already-unlinked temp file (nothing is left on
//! disk, whatever happens to the request) and read back as a stream.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::CompressionMethod;

/// What goes into the archive.
pub enum Entry {
    /// A local file (media: stored as it is, already compressed).
    File { name: String, path: PathBuf },
    /// Text (timelines, subtitles, JSON: deflated).
    Bytes { name: String, bytes: Vec<u8> },
}

/// Writes `entries` into an anonymous temp file in `dir` and returns it
/// rewound, with its size.
pub fn write_zip(dir: &Path, entries: &[Entry]) -> io::Result<(File, u64)> {
    let file = tempfile::tempfile_in(dir)?;
    let mut zip = zip::ZipWriter::new(file);
    let stored = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .large_file(true);
    let deflated = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    for e in entries {
        match e {
            Entry::File { name, path } => {
                zip.start_file(name.as_str(), stored)
                    .map_err(io::Error::other)?;
                io::copy(&mut File::open(path)?, &mut zip)?;
            }
            Entry::Bytes { name, bytes } => {
                zip.start_file(name.as_str(), deflated)
                    .map_err(io::Error::other)?;
                zip.write_all(bytes)?;
            }
        }
    }
    let mut file = zip.finish().map_err(io::Error::other)?;
    let size = file.seek(SeekFrom::End(0))?;
    file.seek(SeekFrom::Start(0))?;
    Ok((file, size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn files_and_texts_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let media = dir.path().join("clip.mp4");
        std::fs::write(&media, vec![7u8; 100_000]).unwrap();
        let (file, size) = write_zip(
            dir.path(),
            &[
                Entry::File {
                    name: "clips/clip-1.mp4".into(),
                    path: media,
                },
                Entry::Bytes {
                    name: "clips.json".into(),
                    bytes: b"[]".to_vec(),
                },
            ],
        )
        .unwrap();
        assert!(size > 100_000);
        let mut zip = zip::ZipArchive::new(file).unwrap();
        let mut v = Vec::new();
        zip.by_name("clips/clip-1.mp4")
            .unwrap()
            .read_to_end(&mut v)
            .unwrap();
        assert_eq!(v, vec![7u8; 100_000]);
        let mut s = String::new();
        zip.by_name("clips.json")
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "[]");
        // Only the media file is in the folder: the archive has no name.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
