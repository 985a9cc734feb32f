//! The agent registry's statements on SQLite ([`crate::store::driver::agents`]); the
//! rules are [`crate::store::queue::agents`].

use rusqlite::{params, OptionalExtension};

use super::tx::{Sql, SqlRead};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::agents::{
    AgentEnd, AgentInstanceRef, AgentReads, AgentRow, AgentStatements, LiveAgentRow, NewAgent,
};

fn agent_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AgentRow> {
    Ok(AgentRow {
        id: r.get(0)?,
        instance: r.get(1)?,
        owner: r.get(2)?,
        lineage: r.get(3)?,
        entered_ms: r.get(4)?,
        expires_ms: r.get(5)?,
        ended_ms: r.get(6)?,
        end_reason: r.get(7)?,
    })
}

fn instance_ref(r: &rusqlite::Row<'_>) -> rusqlite::Result<AgentInstanceRef> {
    Ok(AgentInstanceRef {
        id: r.get(0)?,
        instance: r.get(1)?,
    })
}

impl AgentReads for SqlRead<'_> {
    fn live_agent_row(&mut self, id: &str, now: Millis) -> Result<Option<LiveAgentRow>> {
        Ok(self
            .0
            .prepare_cached(
                "SELECT instance, owner_id FROM agents
                 WHERE agent_id = ?1 AND ended_ms IS NULL AND (expires_ms IS NULL OR expires_ms >= ?2)",
            )?
            .query_row(params![id, now], |r| {
                Ok(LiveAgentRow {
                    instance: r.get(0)?,
                    owner: r.get(1)?,
                })
            })
            .optional()?)
    }

    fn agent_instance_row(&mut self, id: &str, instance: &str) -> Result<Option<AgentRow>> {
        Ok(self
            .0
            .prepare_cached(
                "SELECT agent_id, instance, owner_id, lineage, entered_ms, expires_ms, ended_ms, end_reason
                 FROM agents WHERE agent_id = ?1 AND instance = ?2",
            )?
            .query_row(params![id, instance], agent_row)
            .optional()?)
    }

    fn agent_rows(&mut self, not_ended_only: bool) -> Result<Vec<AgentRow>> {
        let mut stmt = self.0.prepare(
            "SELECT agent_id, instance, owner_id, lineage, entered_ms, expires_ms, ended_ms, end_reason
             FROM agents WHERE (?1 = 0 OR ended_ms IS NULL) ORDER BY entered_ms DESC, agent_id",
        )?;
        let rows = stmt.query_map([not_ended_only as i64], agent_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl AgentStatements for Sql<'_, '_> {
    fn supersede_not_ended_agent(&mut self, id: &str, now: Millis) -> Result<usize> {
        Ok(self.0.execute(
            "UPDATE agents SET ended_ms = ?1, end_reason = 'superseded' WHERE agent_id = ?2 AND ended_ms IS NULL",
            params![now, id],
        )?)
    }

    fn insert_agent(&mut self, a: NewAgent<'_>) -> Result<()> {
        self.0.execute(
            "INSERT INTO agents (agent_id, instance, owner_id, owner_instance, lineage, ttl_ms, entered_ms, heartbeat_ms, expires_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
            params![a.id, a.instance, a.owner, a.owner_instance, a.lineage, a.ttl_ms, a.now, a.expires_ms],
        )?;
        Ok(())
    }

    fn heartbeat_agent_if_live(&mut self, id: &str, instance: &str, now: Millis) -> Result<usize> {
        Ok(self.0.execute(
            "UPDATE agents SET heartbeat_ms = ?1, expires_ms = CASE WHEN ttl_ms IS NULL THEN NULL ELSE ?1 + ttl_ms END
             WHERE agent_id = ?2 AND instance = ?3 AND ended_ms IS NULL AND (expires_ms IS NULL OR expires_ms >= ?1)",
            params![now, id, instance],
        )?)
    }

    fn end_agent_if_not_ended(
        &mut self,
        id: &str,
        instance: &str,
        now: Millis,
        why: AgentEnd,
    ) -> Result<usize> {
        Ok(self.0.execute(
            "UPDATE agents SET ended_ms = ?1, end_reason = ?4
             WHERE agent_id = ?2 AND instance = ?3 AND ended_ms IS NULL",
            params![now, id, instance, why.as_str()],
        )?)
    }

    fn not_ended_agents_owned_by(&mut self, owner: &str) -> Result<Vec<AgentInstanceRef>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT agent_id, instance FROM agents WHERE owner_id = ?1 AND ended_ms IS NULL
             ORDER BY entered_ms, agent_id",
        )?;
        let rows = stmt.query_map([owner], instance_ref)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn not_ended_agents_expired_before(&mut self, now: Millis) -> Result<Vec<AgentInstanceRef>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT agent_id, instance FROM agents
             WHERE ended_ms IS NULL AND expires_ms IS NOT NULL AND expires_ms < ?1
             ORDER BY expires_ms, agent_id",
        )?;
        let rows = stmt.query_map([now], instance_ref)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
