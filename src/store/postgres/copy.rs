//! Rows sent with a binary `COPY … FROM STDIN`, framed here.
//!
//! Why not the client's own binary writer: it takes every row through the client's
//! runtime (a `block_on` a row), and in a PostgreSQL burst that was a tenth of the
//! committing thread's time (a profile of the daemon, docs/PERFORMANCE.md). Here a table's
//! rows are framed into one buffer, each value encoded by its own [`ToSql`] (the encoding
//! the client would use), and the buffer goes to the server in one write.
//!
//! The framing is PostgreSQL's binary copy format: a signature, a flags word and an empty
//! header extension; per row the number of fields, then each field's length (-1 for NULL)
//! and its bytes; a trailer of -1.

use std::io::Write;

use bytes::{BufMut, BytesMut};
use postgres::types::{IsNull, ToSql, Type};
use postgres::Transaction;

use crate::error::{Error, Result};

/// The signature, the flags (none) and the header extension's length (0).
const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// One table's rows for a binary `COPY`, framed and encoded, not yet sent.
pub struct CopyRows {
    buf: BytesMut,
    types: &'static [Type],
}

impl CopyRows {
    /// Rows whose fields have these types, in the order of the `COPY`'s column list.
    pub fn new(types: &'static [Type]) -> CopyRows {
        let mut buf = BytesMut::with_capacity(64 * 1024);
        buf.put_slice(HEADER);
        CopyRows { buf, types }
    }

    /// Add one row: a value per type given to [`CopyRows::new`], in order.
    pub fn row(&mut self, values: &[&(dyn ToSql + Sync)]) -> Result<()> {
        if values.len() != self.types.len() {
            return Err(Error::Invalid(format!(
                "a copied row has {} values for {} columns",
                values.len(),
                self.types.len()
            )));
        }
        self.buf.put_i16(values.len() as i16);
        for (value, ty) in values.iter().zip(self.types) {
            let at = self.buf.len();
            self.buf.put_i32(0);
            let written = value
                .to_sql_checked(ty, &mut self.buf)
                .map_err(|e| Error::Invalid(format!("a copied value ({ty}): {e}")))?;
            let len = match written {
                IsNull::Yes => -1,
                IsNull::No => i32::try_from(self.buf.len() - at - 4)
                    .map_err(|_| Error::Invalid("a copied value over 2 GiB".into()))?,
            };
            self.buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        Ok(())
    }

    /// Send the rows with `copy` (a `COPY … FROM STDIN (FORMAT binary)` whose columns are
    /// the types', in order); the number of rows copied.
    pub fn send(mut self, tx: &mut Transaction<'_>, copy: &str) -> Result<u64> {
        self.buf.put_i16(-1);
        let mut writer = tx.copy_in(copy)?;
        if let Err(e) = writer.write_all(&self.buf) {
            // The writer's errors are the client's, wrapped.
            return Err(
                match e.into_inner().map(|b| b.downcast::<postgres::Error>()) {
                    Some(Ok(pg)) => Error::Pg(*pg),
                    Some(Err(other)) => Error::Invalid(format!("sending copied rows: {other}")),
                    None => Error::Invalid("sending copied rows failed".into()),
                },
            );
        }
        Ok(writer.finish()?)
    }
}
