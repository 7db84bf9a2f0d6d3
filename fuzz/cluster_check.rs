//! Properties of `tern_cluster::Msg::decode`, shared by the cargo-fuzz target
//! (`fuzz/fuzz_targets/cluster_msg.rs`) and the randomized test
//! `crates/cluster/tests/codec_props.rs`. For any bytes:
//! - decoding never panics, and `frame_len` agrees with it on the message's length;
//! - a decoded message encodes to bytes that decode to the same message and encode the same way
//!   again (encoding is canonical: the same bytes as the input whenever the input was).

use tern_cluster::msg::frame_len;
use tern_cluster::Msg;

/// Returns whether `data` decoded.
pub fn check(data: &[u8]) -> bool {
    let framed = frame_len(data);
    match Msg::decode(data) {
        Ok(msg) => {
            assert_eq!(
                framed,
                Ok(Some(data.len())),
                "a decoded message fills its frame"
            );
            let bytes = msg.encode();
            let again = Msg::decode(&bytes).expect("an encoded message decodes");
            assert_eq!(again, msg, "decode(encode(m)) == m");
            assert_eq!(again.encode(), bytes, "encoding is stable");
            true
        }
        Err(_) => {
            if let Ok(Some(n)) = framed {
                // The frame itself may be fine (then the body or the version is not).
                assert!(n >= tern_cluster::msg::HEADER_LEN);
            }
            false
        }
    }
}
