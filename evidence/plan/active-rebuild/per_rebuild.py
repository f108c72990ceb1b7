import json, sys
# Per rebuild, from a counted run's push-active phases: the newest page's
# cost per operation less the older page's (a read from a built mailbox),
# over the rebuilds per newest page the store counted.
print("%-34s %8s %8s %8s %8s %8s %8s %8s %8s %8s" % ("run", "rebuilds", "entries", "read", "written", "inserted", "updated", "lookups", "db us", "app us"))
for path in sys.argv[1:]:
    r = json.load(open(path))
    for m in r["models"]:
        if m["name"] != "push-active":
            continue
        n, o = m["retrieve"]["cost"], m["retrieve_older"]["cost"]
        k = m["extra"]["newest_rebuilds_per_op"]
        per = lambda key: (n[key] - o[key]) / k
        label = "%s %d users" % (r["dataset"]["graph"].split("(")[0], r["dataset"]["users"])
        print("%-34s %8.3f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f" % (label, k, m["extra"]["newest_rows_per_rebuild"],
              per("rows_read_per_op"), per("rows_written_per_op"), per("rows_inserted_per_op"), per("rows_updated_per_op"),
              per("index_lookups_per_op"), per("db_cpu_us_per_op"), per("cpu_us_per_op")))
