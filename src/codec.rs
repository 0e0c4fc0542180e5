//! The protobuf codec of every generated service and client: tonic-prost's, except that a body
//! that does not decode (invalid UTF-8 in a string, a truncated message, a wrong wire type) is
//! the sender's fault — INVALID_ARGUMENT naming the request, with an `ErrorInfo` — rather than
//! tonic's INTERNAL, which Baton keeps for its own bugs. A body larger than the maximum message
//! size is refused by tonic before it reaches the codec, with OUT_OF_RANGE.

use std::marker::PhantomData;

use prost::Message;
use tonic::{
    codec::{BufferSettings, Codec, DecodeBuf, Decoder},
    Status,
};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

use crate::error::Error;

/// `tonic_prost::ProstCodec` with decode errors as INVALID_ARGUMENT (see the module doc).
#[derive(Debug, Clone)]
pub struct ProtoCodec<T, U> {
    inner: ProstCodec<T, U>,
    _pd: PhantomData<(T, U)>,
}

impl<T, U> Default for ProtoCodec<T, U> {
    fn default() -> Self {
        Self { inner: ProstCodec::default(), _pd: PhantomData }
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
        self.inner.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProtoDecoder(self.inner.decoder())
    }
}

/// Decodes like `ProstDecoder`; a message that does not decode is INVALID_ARGUMENT.
#[derive(Debug, Clone)]
pub struct ProtoDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default> Decoder for ProtoDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|status| {
            Error::invalid("request", format!("is not a valid protobuf message of its type: {}", status.message()))
                .into()
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
