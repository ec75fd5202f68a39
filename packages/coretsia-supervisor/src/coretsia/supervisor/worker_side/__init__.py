"""The worker side: the code that runs in a worker process (a task worker or an entry
worker), from the launcher's boot to its exit, and in the fork server that forks them.

Never imports the daemon, the configuration or the ``ProcessManager`` library: a worker
boots from the generation alone. Empty on purpose: every worker's boot imports this
package, and must pay for nothing but the modules it uses.
"""
