-- The receipt whose run applied an effect. A replay that finds the effect
-- applied by another receipt changed nothing: it is unchanged, with no
-- changes, where it used to repeat the original's result. A retry of the
-- run that applied it still answers that result. Effects applied before
-- this column (and by a release without it, during a rolling upgrade)
-- leave it null and are answered as before.
ALTER TABLE inbound_effects ADD COLUMN applied_by uuid;
