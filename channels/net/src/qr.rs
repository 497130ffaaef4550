//! Renders a login QR URL as terminal text with Unicode half blocks (any platform's scan login;
//! the daemon's terminal login shows it).

use qrcode::QrCode;
use qrcode::render::unicode::Dense1x2;

/// The data could not be encoded as a QR code (far too long).
#[derive(Debug, thiserror::Error)]
#[error("cannot render the login QR code: {0}")]
pub struct QrRenderError(String);

/// Renders `data` (what the code encodes, e.g. a login URL) as lines of Unicode
/// half blocks, two modules per character cell, with the quiet zone.
///
/// Colours are inverted for the usual dark terminal: the code's light modules print as
/// blocks, so the terminal's dark background plays the dark modules. Pass
/// `dark_background = false` for a light terminal.
pub fn render_qr_terminal(data: &str, dark_background: bool) -> Result<String, QrRenderError> {
    let code = QrCode::new(data.as_bytes()).map_err(|e| QrRenderError(e.to_string()))?;
    let (dark, light) = if dark_background {
        (Dense1x2::Light, Dense1x2::Dark)
    } else {
        (Dense1x2::Dark, Dense1x2::Light)
    };
    Ok(code
        .render::<Dense1x2>()
        .dark_color(dark)
        .light_color(light)
        .quiet_zone(true)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_square_half_block_art() {
        let url = "https://liteapp.weixin.qq.com/q/abcdef0123456789";
        let art = render_qr_terminal(url, true).expect("renders");
        let lines: Vec<&str> = art.lines().collect();
        let width = lines[0].chars().count();
        assert!(
            width >= 21 + 8,
            "a QR is at least 21 modules plus the quiet zone"
        );
        assert!(lines.iter().all(|l| l.chars().count() == width));
        // Two module rows per text line.
        assert_eq!(lines.len(), width.div_ceil(2));
        assert!(
            art.chars()
                .all(|c| matches!(c, ' ' | '█' | '▀' | '▄' | '\n'))
        );
        // Inverting swaps blocks and spaces.
        let light = render_qr_terminal(url, false).expect("renders");
        assert_ne!(art, light);
        assert_eq!(art.matches('\n').count(), light.matches('\n').count());
    }

    #[test]
    fn too_long_data_is_an_error_not_a_panic() {
        assert!(render_qr_terminal(&"x".repeat(10_000), true).is_err());
    }
}
