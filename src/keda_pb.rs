//! Generated messages and stubs of KEDA's external scaler contract (`proto/keda`, by build.rs),
//! served by `edge::keda`; a leaf, so the auth and web layers can name its methods. Public as
//! the client side of that contract too: the integration tests call the scaler through it.

tonic::include_proto!("externalscaler");

/// The encoded descriptors of `externalscaler`, served by reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("keda_descriptor");
