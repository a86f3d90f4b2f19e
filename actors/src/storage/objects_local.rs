//! [`LocalStore`]: objects as files under a directory, with HMAC-signed,
//! expiring URLs (see the parent module for the shared rules).

use super::*;

/// How often a write retries when a concurrent delete removes the object's
/// (then empty) directory between creating it and renaming into it.
const RENAME_ATTEMPTS: usize = 3;

/// Staging files older than this are leftovers of a crashed process.
const STALE_STAGING_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Objects stored as files under a root directory.
///
/// Layout: `root/objects/<key>` holds the objects; `root/staging/` holds
/// files being written, which are renamed into place when complete, so
/// readers never see a partial object. Content types are not recorded: the
/// HTTP layer derives them from the key's extension. Because keys map to
/// paths, a key cannot also be a directory of other keys (`a` and `a/b`);
/// writing the second of such a pair fails with [`StorageError::Io`].
///
/// [`url`](ObjectStore::url) returns
/// `{public_base}/media/{key}?expires=<unix seconds>&sig=<hex>`, the key
/// percent-encoded per segment and `sig` the HMAC-SHA256 of
/// `"{key}\n{expires}"` under the store's secret. The HTTP layer serving
/// `/media/` percent-decodes the path into the key, checks it with
/// [`verify`](LocalStore::verify) and sends the file at
/// [`path_of`](LocalStore::path_of).
pub struct LocalStore {
    objects: PathBuf,
    staging: PathBuf,
    public_base: String,
    secret: Vec<u8>,
}

impl fmt::Debug for LocalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalStore")
            .field("objects", &self.objects)
            .field("public_base", &self.public_base)
            .finish_non_exhaustive()
    }
}

impl LocalStore {
    /// Opens (creating it if needed) the store under `root`. `public_base` is
    /// the service's external base URL, e.g. `https://clips.example.com`;
    /// `secret` signs URLs and must not be empty. Staging files left by a
    /// crashed writer more than a day ago are removed.
    pub fn new(
        root: impl Into<PathBuf>,
        public_base: impl Into<String>,
        secret: impl Into<Vec<u8>>,
    ) -> Result<Self> {
        let root = root.into();
        let secret = secret.into();
        if secret.is_empty() {
            return Err(StorageError::Config(
                "the local store's URL signing secret is empty".to_string(),
            ));
        }
        let public_base = public_base.into().trim_end_matches('/').to_string();
        if public_base.is_empty() {
            return Err(StorageError::Config(
                "the local store's public base URL is empty".to_string(),
            ));
        }
        let objects = root.join("objects");
        let staging = root.join("staging");
        for dir in [&objects, &staging] {
            fs::create_dir_all(dir)
                .map_err(|e| StorageError::io(format!("creating {}", dir.display()), e))?;
        }
        remove_stale_staging_files(&staging)?;
        Ok(LocalStore {
            objects,
            staging,
            public_base,
            secret,
        })
    }

    /// Where the object `key` is (or would be) stored.
    pub fn path_of(&self, key: &str) -> Result<PathBuf> {
        validate_key(key)?;
        Ok(self.objects.join(key))
    }

    /// Whether `sig` is this store's signature of `key` and `expires`, and
    /// `expires` (unix seconds) is not before `now_unix`. The comparison
    /// takes the same time whatever the signature.
    pub fn verify(&self, key: &str, expires: u64, sig: &str, now_unix: u64) -> bool {
        if now_unix > expires || validate_key(key).is_err() {
            return false;
        }
        let Ok(sig) = hex::decode(sig) else {
            return false;
        };
        self.mac(key, expires).verify_slice(&sig).is_ok()
    }

    fn mac(&self, key: &str, expires: u64) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.secret)
            .expect("HMAC accepts keys of any length");
        mac.update(format!("{key}\n{expires}").as_bytes());
        mac
    }

    fn sign(&self, key: &str, expires: u64) -> String {
        hex::encode(self.mac(key, expires).finalize().into_bytes())
    }
}

fn remove_stale_staging_files(staging: &Path) -> Result<()> {
    let entries = fs::read_dir(staging)
        .map_err(|e| StorageError::io(format!("listing {}", staging.display()), e))?;
    for entry in entries {
        let entry =
            entry.map_err(|e| StorageError::io(format!("listing {}", staging.display()), e))?;
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > STALE_STAGING_AGE);
        if stale {
            match fs::remove_file(entry.path()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(StorageError::io(
                        format!("removing stale {}", entry.path().display()),
                        e,
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Writes an object through a staging file: `fill` writes the content, which
/// is synced and then renamed to `dest`.
fn write_object(
    staging: &Path,
    dest: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<u64>,
) -> Result<u64> {
    let dest_text = || dest.display().to_string();
    let mut temp = NamedTempFile::new_in(staging)
        .map_err(|e| StorageError::io(format!("creating a staging file for {}", dest_text()), e))?;
    let size = fill(temp.as_file_mut())
        .map_err(|e| StorageError::io(format!("writing {}", dest_text()), e))?;
    temp.as_file()
        .sync_all()
        .map_err(|e| StorageError::io(format!("syncing {}", dest_text()), e))?;

    let dir = parent_dir(dest);
    let mut attempt = 1;
    loop {
        fs::create_dir_all(dir)
            .map_err(|e| StorageError::io(format!("creating {}", dir.display()), e))?;
        match temp.persist(dest) {
            Ok(_) => return Ok(size),
            Err(err)
                if err.error.kind() == io::ErrorKind::NotFound && attempt < RENAME_ATTEMPTS =>
            {
                temp = err.file;
                attempt += 1;
            }
            Err(err) => {
                return Err(StorageError::io(
                    format!("moving the staged object to {}", dest_text()),
                    err.error,
                ))
            }
        }
    }
}

/// Opens an object file for reading, mapping absence to `NotFound`.
fn open_object(path: &Path, key: &str) -> Result<File> {
    let not_found = || StorageError::NotFound(key.to_string());
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found()),
        Err(e) => return Err(StorageError::io(format!("opening {}", path.display()), e)),
    };
    let metadata = file
        .metadata()
        .map_err(|e| StorageError::io(format!("reading metadata of {}", path.display()), e))?;
    if !metadata.is_file() {
        return Err(not_found());
    }
    Ok(file)
}

/// Removes now-empty directories from `path`'s parent up to (excluding)
/// `root`. Stops at the first directory that is not empty.
fn prune_empty_dirs(root: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(current) = dir {
        if current == root || !current.starts_with(root) || fs::remove_dir(current).is_err() {
            break;
        }
        dir = current.parent();
    }
}

fn remove_object(objects: &Path, key: &str) -> Result<bool> {
    let path = objects.join(key);
    match fs::metadata(&path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(StorageError::io(
                format!("inspecting {}", path.display()),
                e,
            ))
        }
    }
    let removed = match fs::remove_file(&path) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(StorageError::io(format!("deleting {}", path.display()), e)),
    };
    prune_empty_dirs(objects, &path);
    Ok(removed)
}

/// Every object under `objects` whose key starts with `prefix`, sorted.
fn list_objects(objects: &Path, prefix: &str) -> Result<Vec<(String, u64)>> {
    // Walk only the deepest directory the prefix names completely.
    let start = prefix.rfind('/').map_or("", |i| &prefix[..=i]);
    let mut found = BTreeMap::new();
    let mut pending = vec![(objects.join(start), start.to_string())];
    while let Some((dir, dir_key)) = pending.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StorageError::io(format!("listing {}", dir.display()), e)),
        };
        for entry in entries {
            let entry =
                entry.map_err(|e| StorageError::io(format!("listing {}", dir.display()), e))?;
            // Names that are not UTF-8 cannot have been written as keys.
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let key = format!("{dir_key}{name}");
            let file_type = entry.file_type().map_err(|e| {
                StorageError::io(format!("inspecting {}", entry.path().display()), e)
            })?;
            if file_type.is_dir() {
                let sub_key = format!("{key}/");
                if sub_key.starts_with(prefix) || prefix.starts_with(&sub_key) {
                    pending.push((entry.path(), sub_key));
                }
            } else if file_type.is_file() && key.starts_with(prefix) && validate_key(&key).is_ok() {
                let size = match entry.metadata() {
                    Ok(m) => m.len(),
                    // Deleted while listing.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        return Err(StorageError::io(
                            format!("inspecting {}", entry.path().display()),
                            e,
                        ))
                    }
                };
                found.insert(key, size);
            }
        }
    }
    Ok(found.into_iter().collect())
}

#[async_trait]
impl ObjectStore for LocalStore {
    async fn put_file(&self, key: &str, path: &Path, _content_type: &str) -> Result<u64> {
        let dest = self.path_of(key)?;
        let staging = self.staging.clone();
        let source = path.to_path_buf();
        blocking(move || {
            let mut input = File::open(&source)
                .map_err(|e| StorageError::io(format!("opening {}", source.display()), e))?;
            write_object(&staging, &dest, |out| io::copy(&mut input, out))
        })
        .await
    }

    async fn put_bytes(&self, key: &str, bytes: Vec<u8>, _content_type: &str) -> Result<()> {
        let dest = self.path_of(key)?;
        let staging = self.staging.clone();
        blocking(move || {
            write_object(&staging, &dest, |out| {
                io::Write::write_all(out, &bytes).map(|()| bytes.len() as u64)
            })
            .map(drop)
        })
        .await
    }

    async fn get_to_file(&self, key: &str, path: &Path) -> Result<u64> {
        let source = self.path_of(key)?;
        let key = key.to_string();
        let dest = path.to_path_buf();
        blocking(move || {
            let mut input = open_object(&source, &key)?;
            let dir = parent_dir(&dest);
            fs::create_dir_all(dir)
                .map_err(|e| StorageError::io(format!("creating {}", dir.display()), e))?;
            let mut temp = NamedTempFile::new_in(dir).map_err(|e| {
                StorageError::io(format!("creating a temporary file in {}", dir.display()), e)
            })?;
            let size = io::copy(&mut input, temp.as_file_mut()).map_err(|e| {
                StorageError::io(format!("copying {} to {}", key, dest.display()), e)
            })?;
            temp.persist(&dest).map_err(|e| {
                StorageError::io(
                    format!("moving the download to {}", dest.display()),
                    e.error,
                )
            })?;
            Ok(size)
        })
        .await
    }

    async fn get_bytes(&self, key: &str) -> Result<Vec<u8>> {
        let source = self.path_of(key)?;
        let key = key.to_string();
        blocking(move || {
            let mut input = open_object(&source, &key)?;
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut input, &mut bytes)
                .map_err(|e| StorageError::io(format!("reading {}", source.display()), e))?;
            Ok(bytes)
        })
        .await
    }

    async fn size(&self, key: &str) -> Result<Option<u64>> {
        let path = self.path_of(key)?;
        match tokio::fs::metadata(&path).await {
            Ok(m) if m.is_file() => Ok(Some(m.len())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StorageError::io(
                format!("inspecting {}", path.display()),
                e,
            )),
        }
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let objects = self.objects.clone();
        let key = key.to_string();
        blocking(move || remove_object(&objects, &key).map(drop)).await
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64> {
        validate_prefix(prefix)?;
        let objects = self.objects.clone();
        let prefix = prefix.to_string();
        blocking(move || {
            let mut deleted = 0;
            for (key, _size) in list_objects(&objects, &prefix)? {
                if remove_object(&objects, &key)? {
                    deleted += 1;
                }
            }
            Ok(deleted)
        })
        .await
    }

    async fn list_prefix(&self, prefix: &str) -> Result<Vec<(String, u64)>> {
        validate_prefix(prefix)?;
        let objects = self.objects.clone();
        let prefix = prefix.to_string();
        blocking(move || list_objects(&objects, &prefix)).await
    }

    async fn url(&self, key: &str, expires: Duration) -> Result<String> {
        validate_key(key)?;
        let expires_at = now_unix().saturating_add(expires.as_secs());
        Ok(format!(
            "{}/media/{}?expires={expires_at}&sig={}",
            self.public_base,
            utf8_percent_encode(key, KEY_IN_URL),
            self.sign(key, expires_at)
        ))
    }
}
