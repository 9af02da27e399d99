//! GPT-2's reversible byte ↔ printable-character map (`bytes_to_unicode` in OpenAI's
//! encoder.py): printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100.. in
//! byte order. Byte-level BPE token texts are strings over these 256 characters.

/// True for the 188 bytes that stand for themselves.
const fn printable(b: u8) -> bool {
    matches!(b, 0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF)
}

const fn build_byte_to_char() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut next = 0x100u32;
    let mut b = 0usize;
    while b < 256 {
        map[b] = if printable(b as u8) {
            b as u8 as char
        } else {
            let c = match char::from_u32(next) {
                Some(c) => c,
                None => '\0',
            };
            next += 1;
            c
        };
        b += 1;
    }
    map
}

/// Byte → character, indexed by byte.
pub(crate) static BYTE_TO_CHAR: [char; 256] = build_byte_to_char();

/// The byte a mapped character stands for, `None` for characters outside the map.
pub(crate) fn char_to_byte(c: char) -> Option<u8> {
    let cp = c as u32;
    if cp < 256 && printable(cp as u8) {
        return Some(cp as u8);
    }
    if (0x100..0x100 + 68).contains(&cp) {
        let rank = cp - 0x100;
        // The rank-th non-printable byte.
        return (0..=255u8).filter(|&b| !printable(b)).nth(rank as usize);
    }
    None
}

/// Appends the mapped form of `bytes` to `out`.
pub(crate) fn encode_bytes_into(bytes: &[u8], out: &mut String) {
    out.extend(bytes.iter().map(|&b| BYTE_TO_CHAR[b as usize]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_is_a_bijection() {
        for b in 0..=255u8 {
            assert_eq!(char_to_byte(BYTE_TO_CHAR[b as usize]), Some(b));
        }
        assert_eq!(BYTE_TO_CHAR[b' ' as usize], 'Ġ');
        assert_eq!(BYTE_TO_CHAR[b'\n' as usize], 'Ċ');
        assert_eq!(char_to_byte('x'), Some(b'x'));
        assert_eq!(char_to_byte('€'), None);
    }
}
