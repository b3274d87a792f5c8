// Herald's Zabbix webhook media type: posts each problem, its updates and its recovery
// to a Herald integration of format "zabbix". Zabbix runs it with the media type's
// parameters as the JSON string `value` (see inbound.ZabbixParameters).
var Herald = {
    // expanded is s, or "" when it is a macro Zabbix left as written ("{EVENT.RECOVERY.DATE}"
    // in a problem's notification).
    expanded: function (s) {
        return typeof s === 'string' && !/^\{[A-Z0-9_.$#]+\}$/.test(s) ? s : '';
    },

    // time turns Zabbix's date and time ("2024.05.13", "10:15:30", in the Zabbix server's
    // time zone, which is this script's) into RFC 3339 in UTC, or "" when either is missing.
    time: function (date, clock) {
        var d = /^(\d{4})\.(\d{2})\.(\d{2})$/.exec(Herald.expanded(date)),
            t = /^(\d{2}):(\d{2}):(\d{2})$/.exec(Herald.expanded(clock));
        if (!d || !t) {
            return '';
        }
        return new Date(+d[1], d[2] - 1, +d[3], +t[1], +t[2], +t[3]).toISOString();
    },

    // tags reads {EVENT.TAGSJSON}: [{"tag":"service","value":"mysql"}, …].
    tags: function (json) {
        try {
            var tags = JSON.parse(Herald.expanded(json) || '[]');
            return Array.isArray(tags) ? tags : [];
        } catch (error) {
            return [];
        }
    }
};

try {
    var params = JSON.parse(value),
        recovery = params.event_value === '0',
        zabbixURL = Herald.expanded(params.zabbix_url).replace(/\/+$/, '');

    if (!Herald.expanded(params.herald_url) || !Herald.expanded(params.herald_token)) {
        throw 'the parameters herald_url and herald_token are required';
    }

    var body = {
        event_id: params.event_id,
        event_value: params.event_value,
        event_nseverity: params.event_nseverity,
        severity: params.severity,
        host: Herald.expanded(params.host),
        trigger_name: params.trigger_name,
        trigger_description: Herald.expanded(params.trigger_description),
        message: Herald.expanded(params.message),
        event_tags: Herald.tags(params.event_tags),
        event_time: Herald.time(params.event_date, params.event_time),
        recovery_time: recovery ? Herald.time(params.recovery_date, params.recovery_time) : '',
        url: Herald.expanded(params.url),
        event_url: zabbixURL && Herald.expanded(params.trigger_id)
            ? zabbixURL + '/tr_events.php?triggerid=' + encodeURIComponent(params.trigger_id) +
                '&eventid=' + encodeURIComponent(params.event_id)
            : ''
    };

    var request = new HttpRequest();
    request.addHeader('Content-Type: application/json');
    request.addHeader('Authorization: Bearer ' + params.herald_token);
    if (Herald.expanded(params.http_proxy)) {
        request.setProxy(params.http_proxy);
    }

    var response = request.post(params.herald_url, JSON.stringify(body)),
        status = request.getStatus();
    if (status < 200 || status >= 300) {
        throw 'Herald answered ' + status + ': ' + response;
    }
    return 'OK';
} catch (error) {
    Zabbix.log(3, '[ Herald webhook ] ' + error);
    throw 'Sending to Herald failed: ' + error;
}
