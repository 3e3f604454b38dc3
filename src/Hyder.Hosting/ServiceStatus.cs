namespace Hyder.Hosting;

/// <summary>
/// The one-line status a host reports once it serves (<c>systemctl status</c> shows it as
/// "Status:"). The host's service sets it during its start; the notifier sends it with READY=1.
/// </summary>
public sealed class ServiceStatus
{
    private volatile string? _text;

    /// <summary>What the host is doing, or null before it says.</summary>
    public string? Text
    {
        get => _text;
        set => _text = value;
    }
}
