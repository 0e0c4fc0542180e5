//! Reads the flat arrays scripts return, field by field, with errors that name the script.

use redis::{FromRedisValue, Value};

use crate::error::{Error, Result};

pub(crate) struct Reply {
    script: &'static str,
    items: std::vec::IntoIter<Value>,
}

impl Reply {
    pub(crate) fn new(script: &'static str, value: Value) -> Result<Self> {
        match value {
            Value::Array(items) => Ok(Self { script, items: items.into_iter() }),
            other => Err(Error::Internal(format!("{script}: expected an array, got {other:?}"))),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.len() == 0
    }

    /// How many fields are left to read.
    pub(crate) fn remaining(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn next<T: FromRedisValue>(&mut self) -> Result<T> {
        let value = self.items.next().ok_or_else(|| Error::Internal(format!("{}: reply too short", self.script)))?;
        T::from_redis_value(value).map_err(|e| Error::Internal(format!("{}: {e}", self.script)))
    }

    /// The last field left (a script that appends its summary after a list of unknown length:
    /// the summary is read from the end, the list from the front).
    pub(crate) fn last<T: FromRedisValue>(&mut self) -> Result<T> {
        let value =
            self.items.next_back().ok_or_else(|| Error::Internal(format!("{}: reply too short", self.script)))?;
        T::from_redis_value(value).map_err(|e| Error::Internal(format!("{}: {e}", self.script)))
    }

    /// A field scripts send as "" when absent.
    pub(crate) fn next_opt<T: FromRedisValue>(&mut self) -> Result<Option<T>> {
        let value = self.items.next().ok_or_else(|| Error::Internal(format!("{}: reply too short", self.script)))?;
        match &value {
            Value::BulkString(b) if b.is_empty() => Ok(None),
            Value::Nil => Ok(None),
            _ => T::from_redis_value(value).map(Some).map_err(|e| Error::Internal(format!("{}: {e}", self.script))),
        }
    }
}
