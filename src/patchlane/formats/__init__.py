"""The files patchlane writes and reads back: lane reports and their envelope, the slice, the
receipt and the dependency map. Each is decoded strictly at the edge and then passed around
as a frozen value (docs/architecture.md §4, §6)."""
