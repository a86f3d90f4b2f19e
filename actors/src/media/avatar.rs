//! Avatars: the bytes must decode as PNG, JPEG or WebP (whatever the file is
//! called); the picture is centre-cropped to a square and resized to 512 px.
//! What a picture may cost is read from its header before decoding: at most
//! 4096 px a side and [`AVATAR_MAX_DECODED`] bytes decoded (16 Mpx at 8 bits
//! per channel), and the decoder may allocate no more than that.

use image::{imageops::FilterType, ImageDecoder, ImageFormat};

pub const AVATAR_SIZE: u32 = 512;

/// Largest width or height accepted, read from the header before decoding
/// (a small file can declare a huge picture).
pub const AVATAR_MAX_SIDE: u32 = 4096;

/// Largest decoded picture, in bytes: 4096×4096 RGBA at 8 bits per channel
/// (a 16-bit picture of that size is twice this and refused).
pub const AVATAR_MAX_DECODED: u64 = 4096 * 4096 * 4;

/// Why an avatar was refused; each reads as a sentence for the user.
#[derive(Debug, thiserror::Error)]
pub enum AvatarError {
    /// Not a picture, or not one of the accepted formats.
    #[error("the avatar is not an image (use PNG, JPEG or WebP)")]
    NotAnImage(#[source] image::ImageError),
    #[error("{0:?} avatars are not accepted: use PNG, JPEG or WebP")]
    Format(ImageFormat),
    /// Larger than [`AVATAR_MAX_SIDE`] a side, or than
    /// [`AVATAR_MAX_DECODED`] decoded (read from the header).
    #[error(
        "the avatar is {width}x{height} pixels: at most {}x{} is accepted",
        AVATAR_MAX_SIDE,
        AVATAR_MAX_SIDE
    )]
    TooLarge { width: u32, height: u32 },
    #[error("the avatar is {width}x{height} pixels at {bits} bits per channel: at most 16 megapixels at 8 bits is accepted")]
    TooDeep { width: u32, height: u32, bits: u16 },
    /// The picture does not decode, or has no pixels.
    #[error("the avatar cannot be decoded: {0}")]
    Decode(#[source] image::ImageError),
    #[error("the avatar is empty")]
    Empty,
    /// The square could not be written as PNG.
    #[error("cannot encode the avatar: {0}")]
    Encode(#[source] image::ImageError),
}

/// Decodes, crops, resizes and re-encodes as PNG. The error is a sentence
/// for the user.
pub fn normalize(bytes: &[u8]) -> Result<Vec<u8>, AvatarError> {
    let format = image::guess_format(bytes).map_err(AvatarError::NotAnImage)?;
    if !matches!(
        format,
        ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::WebP
    ) {
        return Err(AvatarError::Format(format));
    }
    let reader = || image::ImageReader::with_format(std::io::Cursor::new(bytes), format);
    let (width, height) = reader().into_dimensions().map_err(AvatarError::Decode)?;
    if width > AVATAR_MAX_SIDE || height > AVATAR_MAX_SIDE {
        return Err(AvatarError::TooLarge { width, height });
    }
    let mut decoder = reader().into_decoder().map_err(AvatarError::Decode)?;
    if decoder.total_bytes() > AVATAR_MAX_DECODED {
        let bits =
            decoder.color_type().bits_per_pixel() / u16::from(decoder.color_type().channel_count());
        return Err(AvatarError::TooDeep {
            width,
            height,
            bits,
        });
    }
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(AVATAR_MAX_SIDE);
    limits.max_image_height = Some(AVATAR_MAX_SIDE);
    limits.max_alloc = Some(AVATAR_MAX_DECODED);
    decoder.set_limits(limits).map_err(AvatarError::Decode)?;
    let img = image::DynamicImage::from_decoder(decoder).map_err(AvatarError::Decode)?;
    let side = img.width().min(img.height());
    if side == 0 {
        return Err(AvatarError::Empty);
    }
    let x = (img.width() - side) / 2;
    let y = (img.height() - side) / 2;
    // Cropped in place (a view, not a copy of up to 64 MB).
    let square = match &img {
        image::DynamicImage::ImageRgb8(i) => {
            image::DynamicImage::ImageRgb8(image::imageops::resize(
                &*image::imageops::crop_imm(i, x, y, side, side),
                AVATAR_SIZE,
                AVATAR_SIZE,
                FilterType::Lanczos3,
            ))
        }
        image::DynamicImage::ImageRgba8(i) => {
            image::DynamicImage::ImageRgba8(image::imageops::resize(
                &*image::imageops::crop_imm(i, x, y, side, side),
                AVATAR_SIZE,
                AVATAR_SIZE,
                FilterType::Lanczos3,
            ))
        }
        other => other.crop_imm(x, y, side, side).resize_exact(
            AVATAR_SIZE,
            AVATAR_SIZE,
            FilterType::Lanczos3,
        ),
    };
    drop(img);
    let mut out = std::io::Cursor::new(Vec::new());
    square
        .write_to(&mut out, ImageFormat::Png)
        .map_err(AvatarError::Encode)?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_squared_and_resized() {
        let img = image::RgbImage::from_pixel(800, 400, image::Rgb([200, 10, 10]));
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut png, ImageFormat::Png)
            .unwrap();
        let out = normalize(png.get_ref()).unwrap();
        let back = image::load_from_memory(&out).unwrap();
        assert_eq!((back.width(), back.height()), (512, 512));
    }

    #[test]
    fn huge_pictures_are_refused_before_decoding() {
        let img = image::GrayImage::new(AVATAR_MAX_SIDE + 1, 8);
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageLuma8(img)
            .write_to(&mut png, ImageFormat::Png)
            .unwrap();
        let err = normalize(png.get_ref()).unwrap_err().to_string();
        assert!(err.contains("at most 4096x4096"), "{err}");
    }

    #[test]
    fn deep_pictures_over_the_budget_are_refused_before_decoding() {
        let img = image::ImageBuffer::<image::Rgba<u16>, _>::new(4096, 4096);
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgba16(img)
            .write_to(&mut png, ImageFormat::Png)
            .unwrap();
        let err = normalize(png.get_ref()).unwrap_err().to_string();
        assert!(err.contains("16 bits per channel"), "{err}");
    }

    #[test]
    fn non_images_are_refused() {
        assert!(normalize(b"hello, I am text")
            .unwrap_err()
            .to_string()
            .contains("not an image"));
        assert!(normalize(b"GIF89a\x01\x00\x01\x00").is_err());
    }
}
