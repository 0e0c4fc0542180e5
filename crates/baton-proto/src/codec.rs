//! The protobuf codec of every generated service and client: tonic-prost's, except that a body
//! that does not decode (invalid UTF-8 in a string, a truncated message, a wrong wire type) is
//! the sender's fault — INVALID_ARGUMENT naming the request, with an `ErrorInfo` — rather than
//! tonic's INTERNAL, which Baton keeps for its own bugs. A body larger than the maximum message
//! size is refused by tonic before it reaches the codec, with OUT_OF_RANGE.
//!
//! Its buffers start at 256 bytes instead of tonic's 8 KiB (they grow as a message needs): every
//! open stream holds one to decode and one to encode, and ten thousand idle Session streams
//! would otherwise hold 160 MB of buffers for messages of a few dozen bytes.

use std::marker::PhantomData;

use prost::Message;
use tonic::{
    codec::{BufferSettings, Codec, DecodeBuf, Decoder},
    Status,
};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

use tonic_types::{ErrorDetails, StatusExt};

/// Each call's encode and decode buffers: 256 bytes at first, tonic's yield threshold (32 KiB).
fn buffers() -> BufferSettings {
    BufferSettings::new(256, 32 * 1024)
}

/// `tonic_prost::ProstCodec` with decode errors as INVALID_ARGUMENT and small first buffers
/// (see the module doc).
#[derive(Debug, Clone)]
pub struct ProtoCodec<T, U> {
    _pd: PhantomData<(T, U)>,
}

impl<T, U> Default for ProtoCodec<T, U> {
    fn default() -> Self {
        Self { _pd: PhantomData }
    }
}

impl<T, U> Codec for ProtoCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProtoDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(buffers())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProtoDecoder(ProstCodec::<T, U>::raw_decoder(buffers()))
    }
}

/// Decodes like `ProstDecoder`; a message that does not decode is INVALID_ARGUMENT.
#[derive(Debug, Clone)]
pub struct ProtoDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default> Decoder for ProtoDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|status| invalid_request(status.message()))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}

/// INVALID_ARGUMENT naming the field `request`, as the server's own validation says it: a
/// `BadRequest` violation and an `ErrorInfo` (domain `baton`, metadata `field`).
fn invalid_request(why: &str) -> Status {
    // Bounded like every error text Baton sends: it may quote what the sender sent.
    let mut reason = format!("is not a valid protobuf message of its type: {why}");
    if reason.len() > 512 {
        let mut end = 509;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
        reason.push('…');
    }
    let mut details = ErrorDetails::new();
    details.add_bad_request_violation("request", reason.clone());
    details.set_error_info(
        "INVALID_ARGUMENT",
        "baton",
        std::collections::HashMap::from([("field".to_string(), "request".to_string())]),
    );
    Status::with_error_details(tonic::Code::InvalidArgument, format!("request: {reason}"), details)
}
