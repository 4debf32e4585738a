-- The sqlite3 workload of BENCHMARKS.md: a 1.5 M-row table built in memory, indexed and sorted,
-- through millions of small mallocs. Usage: sqlite3 :memory: < benches/programs/sqlite.sql
create table t(k integer primary key, v text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 1500000)
insert into t select x, printf('%08d-%s', (x * 7919) % 1000003, hex(x)) from c;
create index tv on t(v);
select count(*), sum(length(v)), min(v), max(v) from t;
select v from t order by v desc limit 3;
