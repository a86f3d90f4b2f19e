//! The S3 backend of [`ObjectStore`], through aws-sdk-s3 (custom endpoint
//! and path-style addressing for S3-compatible servers; presigned URLs).

use super::*;

/// Where an [`S3Store`] keeps its objects and how it signs in.
#[derive(Clone)]
pub struct S3Config {
    pub bucket: String,
    pub region: String,
    /// An S3-compatible endpoint such as `http://127.0.0.1:9000`; `None` for
    /// AWS itself. Setting it also switches to path-style addressing.
    pub endpoint_url: Option<String>,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Create the bucket on connect if it does not exist.
    pub create_bucket: bool,
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("endpoint_url", &self.endpoint_url)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field("create_bucket", &self.create_bucket)
            .finish()
    }
}

/// Objects in an S3 bucket.
///
/// Uploads are single PUTs, so an object is at most 5 GiB. Content types are
/// stored with the object and served with presigned downloads.
#[derive(Debug, Clone)]
pub struct S3Store {
    client: aws_sdk_s3::Client,
    bucket: String,
}

/// Largest number of keys one DeleteObjects request accepts.
const DELETE_BATCH: usize = 1000;

/// A size reported by S3; absent or negative (never seen in practice) is 0.
fn object_size(reported: Option<i64>) -> u64 {
    reported.and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
}

fn s3_error<E, R>(what: impl fmt::Display, err: SdkError<E, R>) -> StorageError
where
    E: std::error::Error + 'static,
    R: fmt::Debug,
{
    StorageError::Backend(format!("S3 {what}: {}", DisplayErrorContext(&err)))
}

impl S3Store {
    /// Builds a client from `cfg` alone (no environment variables or AWS
    /// profile files are read) and, if `cfg.create_bucket`, creates the
    /// bucket when it is missing.
    pub async fn connect(cfg: S3Config) -> Result<Self> {
        if cfg.bucket.is_empty() {
            return Err(StorageError::Config("the S3 bucket name is empty".into()));
        }
        if cfg.region.is_empty() {
            return Err(StorageError::Config("the S3 region is empty".into()));
        }
        let credentials = Credentials::new(
            cfg.access_key_id.clone(),
            cfg.secret_access_key.clone(),
            None,
            None,
            "clipforge-config",
        );
        let mut builder = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(cfg.region.clone()))
            .credentials_provider(credentials);
        if let Some(endpoint) = &cfg.endpoint_url {
            builder = builder.endpoint_url(endpoint).force_path_style(true);
        }
        let store = S3Store {
            client: aws_sdk_s3::Client::from_conf(builder.build()),
            bucket: cfg.bucket.clone(),
        };
        if cfg.create_bucket {
            store.ensure_bucket(&cfg.region).await?;
        }
        Ok(store)
    }

    async fn ensure_bucket(&self, region: &str) -> Result<()> {
        let bucket = &self.bucket;
        match self.client.head_bucket().bucket(bucket).send().await {
            Ok(_) => return Ok(()),
            Err(err) if err.as_service_error().is_some_and(|e| e.is_not_found()) => {}
            Err(err) => return Err(s3_error(format_args!("HeadBucket {bucket}"), err)),
        }
        let mut create = self.client.create_bucket().bucket(bucket);
        // us-east-1 is the default location and must not be named.
        if region != "us-east-1" {
            create = create.create_bucket_configuration(
                CreateBucketConfiguration::builder()
                    .location_constraint(BucketLocationConstraint::from(region))
                    .build(),
            );
        }
        match create.send().await {
            Ok(_) => {
                tracing::info!(bucket = %bucket, "created S3 bucket");
                Ok(())
            }
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_bucket_already_owned_by_you()) =>
            {
                Ok(())
            }
            Err(err) => Err(s3_error(format_args!("CreateBucket {bucket}"), err)),
        }
    }

    fn object_text(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// Starts a download, mapping a missing key to `NotFound`.
    async fn get_object(&self, key: &str) -> Result<GetObjectOutput> {
        validate_key(key)?;
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(output) => Ok(output),
            Err(err) if err.as_service_error().is_some_and(|e| e.is_no_such_key()) => {
                Err(StorageError::NotFound(key.to_string()))
            }
            Err(err) => Err(s3_error(
                format_args!("GetObject {}", self.object_text(key)),
                err,
            )),
        }
    }
}

#[async_trait]
impl ObjectStore for S3Store {
    async fn put_file(&self, key: &str, path: &Path, content_type: &str) -> Result<u64> {
        validate_key(key)?;
        let metadata = tokio::fs::metadata(path)
            .await
            .map_err(|e| StorageError::io(format!("inspecting {}", path.display()), e))?;
        if !metadata.is_file() {
            return Err(StorageError::io(
                format!("uploading {}", path.display()),
                io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"),
            ));
        }
        let body = ByteStream::from_path(path).await.map_err(|e| {
            StorageError::io(format!("opening {}", path.display()), io::Error::other(e))
        })?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(body)
            .send()
            .await
            .map_err(|e| {
                s3_error(
                    format_args!(
                        "PutObject {} from {}",
                        self.object_text(key),
                        path.display()
                    ),
                    e,
                )
            })?;
        Ok(metadata.len())
    }

    async fn put_bytes(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<()> {
        validate_key(key)?;
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(|e| s3_error(format_args!("PutObject {}", self.object_text(key)), e))?;
        Ok(())
    }

    async fn get_to_file(&self, key: &str, path: &Path) -> Result<u64> {
        let output = self.get_object(key).await?;

        let dir = parent_dir(path).to_path_buf();
        let (file, temp_path) = blocking(move || {
            fs::create_dir_all(&dir)
                .map_err(|e| StorageError::io(format!("creating {}", dir.display()), e))?;
            NamedTempFile::new_in(&dir).map_err(|e| {
                StorageError::io(format!("creating a temporary file in {}", dir.display()), e)
            })
        })
        .await?
        .into_parts();
        let mut file = tokio::fs::File::from_std(file);
        let mut body = output.body.into_async_read();
        let copy_context = || {
            format!(
                "downloading {} to {}",
                self.object_text(key),
                path.display()
            )
        };
        let size = tokio::io::copy(&mut body, &mut file)
            .await
            .map_err(|e| StorageError::io(copy_context(), e))?;
        file.flush()
            .await
            .map_err(|e| StorageError::io(copy_context(), e))?;
        drop(file);

        let dest = path.to_path_buf();
        blocking(move || {
            temp_path.persist(&dest).map_err(|e| {
                StorageError::io(
                    format!("moving the download to {}", dest.display()),
                    e.error,
                )
            })
        })
        .await?;
        Ok(size)
    }

    async fn get_bytes(&self, key: &str) -> Result<Vec<u8>> {
        let output = self.get_object(key).await?;
        let body = output.body.collect().await.map_err(|e| {
            StorageError::Backend(format!(
                "S3 GetObject {}: reading the body: {e}",
                self.object_text(key)
            ))
        })?;
        Ok(body.into_bytes().to_vec())
    }

    async fn size(&self, key: &str) -> Result<Option<u64>> {
        validate_key(key)?;
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(output) => Ok(Some(object_size(output.content_length()))),
            Err(err) if err.as_service_error().is_some_and(|e| e.is_not_found()) => Ok(None),
            Err(err) => Err(s3_error(
                format_args!("HeadObject {}", self.object_text(key)),
                err,
            )),
        }
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| s3_error(format_args!("DeleteObject {}", self.object_text(key)), e))?;
        Ok(())
    }

    async fn delete_prefix(&self, prefix: &str) -> Result<u64> {
        let keys: Vec<String> = self
            .list_prefix(prefix)
            .await?
            .into_iter()
            .map(|(key, _size)| key)
            .collect();
        let mut deleted = 0;
        for chunk in keys.chunks(DELETE_BATCH) {
            let objects = chunk
                .iter()
                .map(|key| ObjectIdentifier::builder().key(key).build())
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| StorageError::Backend(format!("S3 DeleteObjects request: {e}")))?;
            let delete = Delete::builder()
                .set_objects(Some(objects))
                .quiet(true)
                .build()
                .map_err(|e| StorageError::Backend(format!("S3 DeleteObjects request: {e}")))?;
            let output = self
                .client
                .delete_objects()
                .bucket(&self.bucket)
                .delete(delete)
                .send()
                .await
                .map_err(|e| {
                    s3_error(
                        format_args!("DeleteObjects under s3://{}/{prefix}", self.bucket),
                        e,
                    )
                })?;
            if let Some(first) = output.errors().first() {
                return Err(StorageError::Backend(format!(
                    "S3 DeleteObjects under s3://{}/{prefix}: {} of {} keys failed, first {:?}: {} {}",
                    self.bucket,
                    output.errors().len(),
                    chunk.len(),
                    first.key().unwrap_or_default(),
                    first.code().unwrap_or_default(),
                    first.message().unwrap_or_default(),
                )));
            }
            deleted += chunk.len() as u64;
        }
        Ok(deleted)
    }

    async fn list_prefix(&self, prefix: &str) -> Result<Vec<(String, u64)>> {
        validate_prefix(prefix)?;
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        let mut found = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| {
                s3_error(
                    format_args!("ListObjectsV2 s3://{}/{prefix}", self.bucket),
                    e,
                )
            })?;
            for object in page.contents() {
                let Some(key) = object.key() else { continue };
                found.push((key.to_string(), object_size(object.size())));
            }
        }
        found.sort_unstable();
        Ok(found)
    }

    async fn url(&self, key: &str, expires: Duration) -> Result<String> {
        validate_key(key)?;
        // S3 accepts lifetimes of up to 7 days; PresigningConfig enforces it.
        let presigning = PresigningConfig::expires_in(expires).map_err(|e| {
            StorageError::Config(format!("presigned URL lifetime {expires:?}: {e}"))
        })?;
        let request = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .presigned(presigning)
            .await
            .map_err(|e| s3_error(format_args!("presigning GET {}", self.object_text(key)), e))?;
        Ok(request.uri().to_string())
    }
}
