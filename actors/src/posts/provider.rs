//! The platforms clips are published to ([`Provider`]).

use serde::{Deserialize, Serialize};

/// A platform clips are published to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Provider {
    TikTok,
    Instagram,
    YouTube,
}

impl Provider {
    pub const ALL: [Provider; 3] = [Provider::TikTok, Provider::Instagram, Provider::YouTube];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "tiktok" => Some(Provider::TikTok),
            "instagram" => Some(Provider::Instagram),
            "youtube" => Some(Provider::YouTube),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::TikTok => "tiktok",
            Provider::Instagram => "instagram",
            Provider::YouTube => "youtube",
        }
    }

    pub fn display(self) -> &'static str {
        match self {
            Provider::TikTok => "TikTok",
            Provider::Instagram => "Instagram",
            Provider::YouTube => "YouTube",
        }
    }

    /// Longest title/caption the platform accepts.
    pub fn max_title_chars(self) -> usize {
        match self {
            Provider::YouTube => 100,
            Provider::TikTok | Provider::Instagram => 2200,
        }
    }
}
