// The deploy files are for Linux: systemd units, shell scripts, Unix datagram sockets.
[assembly: System.Runtime.Versioning.SupportedOSPlatform("linux")]
