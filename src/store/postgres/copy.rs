//! Rows sent with a binary `COPY … FROM STDIN`, framed here.
//!
//! Why not the client's own binary writer: it takes every row through the client's
//! runtime (a `block_on` a row), and in a PostgreSQL burst that was a tenth of the
//! committing thread's time (a profile of the daemon, docs/PERFORMANCE.md). Here each row
//! is framed into its table's buffer as it is held, each value encoded by its own
//! [`ToSql`] (the encoding the client would use), so a held row is never copied into
//! owned columns first; the buffer goes to the server in one write.
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
    /// The header and the rows; empty (nothing allocated) until the first row.
    buf: BytesMut,
    rows: usize,
    types: &'static [Type],
}

/// How many rows (and bytes) were held at some point, to return to ([`CopyRows::truncate`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mark {
    rows: usize,
    bytes: usize,
}

impl CopyRows {
    /// No rows yet, of fields with these types, in the order of the `COPY`'s column list.
    pub fn new(types: &'static [Type]) -> CopyRows {
        CopyRows {
            buf: BytesMut::new(),
            rows: 0,
            types,
        }
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Where the rows end now.
    pub fn mark(&self) -> Mark {
        Mark {
            rows: self.rows,
            bytes: self.buf.len(),
        }
    }

    /// Forget the rows added after `mark`.
    pub fn truncate(&mut self, mark: Mark) {
        if mark.rows < self.rows {
            self.rows = mark.rows;
            self.buf.truncate(mark.bytes);
        }
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
        let mark = self.mark();
        if self.buf.is_empty() {
            self.buf.reserve(64 * 1024);
            self.buf.put_slice(HEADER);
        }
        self.buf.put_i16(values.len() as i16);
        for (value, ty) in values.iter().zip(self.types) {
            let at = self.buf.len();
            self.buf.put_i32(0);
            let len = match value.to_sql_checked(ty, &mut self.buf) {
                Ok(IsNull::Yes) => Ok(-1),
                Ok(IsNull::No) => i32::try_from(self.buf.len() - at - 4)
                    .map_err(|_| Error::Invalid("a copied value over 2 GiB".into())),
                Err(e) => Err(Error::Invalid(format!("a copied value ({ty}): {e}"))),
            };
            match len {
                Ok(len) => self.buf[at..at + 4].copy_from_slice(&len.to_be_bytes()),
                Err(e) => {
                    // A row is held whole or not at all.
                    self.buf.truncate(mark.bytes);
                    return Err(e);
                }
            }
        }
        self.rows += 1;
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
