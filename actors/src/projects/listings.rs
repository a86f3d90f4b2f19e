//! Each user's project listing, cached: the total and the rendered pages,
//! dropped whenever one of the user's projects changes (a generation counter
//! keeps a page read during a change from being cached).

use std::collections::HashMap;

use super::domain::{Listing, Projects};
use crate::projects::records::{self, ProjectRecord};
use crate::storage::kv;

impl Projects {
    /// A rendered page of the user's listing (`skip`, `take`), cached until
    /// one of the user's projects changes; `render` builds it from the page
    /// and the total on a miss, read with the store's async side.
    pub async fn listing_page(
        &self,
        user_id: &str,
        skip: usize,
        take: usize,
        render: impl FnOnce(&[ProjectRecord], usize) -> bytes::Bytes,
    ) -> kv::Result<bytes::Bytes> {
        use std::sync::atomic::Ordering;
        let gen = self.listings_gen.load(Ordering::Acquire);
        let total = {
            let listings = self.listings.lock().unwrap_or_else(|e| e.into_inner());
            match listings.get(user_id) {
                Some(l) => {
                    if let Some(page) = l.pages.get(&(skip, take)) {
                        return Ok(page.clone());
                    }
                    Some(l.total)
                }
                None => None,
            }
        };
        let total = match total {
            Some(t) => t,
            None => records::count_projects(&*self.kv, user_id).await?,
        };
        let page = records::list_projects_page(&*self.kv, user_id, skip, take).await?;
        let body = render(&page, total);
        let mut listings = self.listings.lock().unwrap_or_else(|e| e.into_inner());
        if self.listings_gen.load(Ordering::Acquire) == gen {
            if listings.len() >= 10_000 {
                listings.clear();
            }
            let l = listings.entry(user_id.to_string()).or_insert(Listing {
                total,
                pages: HashMap::new(),
            });
            if l.pages.len() < 16 {
                l.pages.insert((skip, take), body.clone());
            }
        }
        Ok(body)
    }

    /// Call after any change to a project of `user_id` (created, saved,
    /// removed): its cached listing is dropped.
    pub fn projects_changed(&self, user_id: &str) {
        self.listings_gen
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        self.listings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(user_id);
    }
}
